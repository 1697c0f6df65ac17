// Package arms holds the encoding arms: each arm is one deterministic way of
// turning tool definitions into the text an agent reads (the full JSON
// baseline, compact signatures, brief signatures, TOON, TRON-style schema
// classes, TSCG), plus the mapping from a tool to the metadata the search
// index ingests under that arm. The profiler compares arms on frozen
// corpora; the proxy renders retrieve_tools answers with the configured arm.
//
// The package is pure: it imports only the standard library, internal/toon
// and internal/config, and never touches the file system, the network, the
// clock or a logger (a test checks its imports). Work that needs a process or
// a file, such as running the TSCG Node shim or reading a fixture file, lives
// in the sibling package internal/arms/armsio and reaches this package through
// the Runner interface or plain bytes.
//
// Every arm obeys the same contract:
//   - the same input gives the same bytes, whatever the key order of the
//     input schema;
//   - a tool an arm cannot render is an error (the caller counts it as a
//     skip), never a quietly shortened encoding;
//   - an arm that drops description text says so through LowerBound;
//   - EncodeIndexMetadata is exactly what the index ingests under the arm, and
//     IndexAltering tells whether that differs from the baseline;
//   - an arm whose external runtime is missing fails at Resolve, before any
//     tool is processed, with an error wrapping ErrArmUnavailable.
package arms
