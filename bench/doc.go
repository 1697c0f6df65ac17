// Package bench is the discovery-effectiveness profiler behind `mcproxy
// bench`: it loads frozen tool corpora (or captures one from live upstreams),
// renders them with every encoding arm, counts tokens, builds the production
// search index from each arm's index metadata, scores graded query sets, and
// writes a versioned report (report.json, report.md, report.svg) that anyone
// can regenerate byte for byte, timestamp aside.
//
// The package owns no production behaviour: nothing imports it, and it may
// import anything internal. Query sets live in bench/queries; the frozen
// corpora and result fixtures live in bench/datasets and are built into the
// binary (see datasets.go) unless --datasets or MCPROXY_DATASETS names
// another directory.
package bench
