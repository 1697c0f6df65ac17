// Package bench is the discovery-effectiveness profiler behind `mcproxy
// bench` (the command's flags, defaults and output files are cmd/mcproxy's):
// it loads frozen tool corpora (or captures one from live upstreams),
// renders them with every encoding arm, counts tokens, ranks graded query
// sets through the production retrieval pipeline fed each arm's index
// metadata, and writes a versioned report (report.json, report.md,
// report.svg) that anyone can regenerate byte for byte, timestamp aside.
//
// The package owns no production behaviour: only cmd/mcproxy imports it,
// and it may import anything internal. Query sets live in bench/queries; the
// frozen corpora and result fixtures live in bench/datasets and are built
// into the binary (see datasets.go) unless --datasets or MCPROXY_DATASETS
// names another directory.
package bench
