package armsio

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// shimDir makes a shim directory in a temporary dir: the repository's real
// shim.mjs, byte for byte, and, when core is not empty, a stand-in
// @tscg/core module with that source. The real package is not on the npm
// registry, so its absence and its protocol can only be exercised this way.
func shimDir(t *testing.T, core string) string {
	t.Helper()
	dir := t.TempDir()
	shim, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "bench", "tscg", "shim.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shim.mjs"), shim, 0o644); err != nil {
		t.Fatal(err)
	}
	if core == "" {
		return dir
	}
	mod := filepath.Join(dir, "node_modules", "@tscg", "core")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	pkg := `{"name":"@tscg/core","version":"0.0.0-test","type":"module","exports":"./index.js"}`
	if err := os.WriteFile(filepath.Join(mod, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "index.js"), []byte(core), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fakeCore compiles a tool into the documented TSCG text shape, and insists
// on the pinned options and the Anthropic tool shape the shim must pass.
const fakeCore = `
export function compress(tools, options) {
  if (options.profile !== 'balanced' || options.preserveToolNames !== true) {
    throw new Error('unexpected options ' + JSON.stringify(options));
  }
  if (tools.length !== 1) throw new Error('expected one tool per call');
  const t = tools[0];
  if (typeof t.name !== 'string' || typeof t.input_schema !== 'object') {
    throw new Error('not an Anthropic tool: ' + JSON.stringify(t));
  }
  if (t.description.includes('FAIL')) throw new Error('cannot compile ' + t.name);
  const props = t.input_schema.properties || {};
  const req = t.input_schema.required || [];
  const params = Object.keys(props).map(k => k + (req.includes(k) ? '*' : '') + ' (' + (props[k].type || 'any') + ')').join(' | ');
  const head = t.name + ': ' + t.description.replace(/^Use this tool to /, '');
  const body = params ? '\n  ' + params : '';
  return { compressed: head + body + '\n[CLOSURE:' + t.name + '(' + req.join(',') + ')]', metrics: {}, appliedPrinciples: [] };
}
`

func loadCorpus(t *testing.T) []config.Tool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Datasets(t), "corpus_v2.tools.json"))
	if err != nil {
		t.Fatalf("reading corpus (set MCPROXY_DATASETS): %v", err)
	}
	var c struct {
		Tools []config.Tool `json:"tools"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.Tools
}

// TestTSCGUnavailable covers the state every fresh checkout is in: no
// @tscg/core. Resolution fails with ErrArmUnavailable and the reason.
func TestTSCGUnavailable(t *testing.T) {
	testenv.Node(t)
	tests := []struct {
		name, dir, wantReason string
		opts                  Options
	}{
		{"no node_modules", shimDir(t, ""), "@tscg/core is not installed in", Options{}},
		{"no shim", t.TempDir(), "shim.mjs is missing", Options{}},
		{"no node", shimDir(t, fakeCore), "node is not installed or not on PATH", Options{Node: "no-such-node-binary-mcproxy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := arms.NewRegistry()
			if err := reg.Register(arms.NewTSCG(NewNodeRunner(tc.dir, tc.opts))); err != nil {
				t.Fatal(err)
			}
			a, err := reg.Resolve(arms.TSCGName)
			if !errors.Is(err, arms.ErrArmUnavailable) || !strings.Contains(err.Error(), tc.wantReason) {
				t.Fatalf("Resolve = %v, %v; want an error wrapping ErrArmUnavailable containing %q", a, err, tc.wantReason)
			}
			row := arms.UnavailableResult(arms.TSCGName, err)
			if !strings.Contains(row.Unavailable, tc.wantReason) {
				t.Errorf("skipped row reason %q does not say %q", row.Unavailable, tc.wantReason)
			}
		})
	}
	// NewTSCGAt is the same arm the profiler builds.
	_, err := arms.NewTSCG(nil).EncodeTool(config.Tool{Name: "x"})
	if !errors.Is(err, arms.ErrArmUnavailable) {
		t.Errorf("arm without runner: got %v", err)
	}
	err = NewTSCGAt(shimDir(t, "")).Available()
	if !errors.Is(err, arms.ErrArmUnavailable) || !strings.Contains(err.Error(), "not on the npm registry; install it by hand") {
		t.Errorf("NewTSCGAt without node_modules: got %v", err)
	}
}

// TestTSCGInRepo checks the arm NewTSCG finds in this checkout: the shim is
// there, and the arm is available exactly when @tscg/core was installed by
// hand.
func TestTSCGInRepo(t *testing.T) {
	testenv.Node(t)
	dir, err := ShimDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(testenv.RepoRoot(t), "bench", "tscg"); dir != want && os.Getenv(ShimDirEnv) == "" {
		t.Errorf("ShimDir = %s, want %s", dir, want)
	}
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", "@tscg", "core", "package.json"))
	err = NewTSCG().Available()
	switch {
	case statErr == nil && err != nil:
		t.Errorf("@tscg/core is installed but the arm is unavailable: %v", err)
	case statErr != nil && (!errors.Is(err, arms.ErrArmUnavailable) || !strings.Contains(err.Error(), "@tscg/core is not installed")):
		t.Errorf("@tscg/core is absent; got %v, want the not-installed reason", err)
	}
}

// TestShimProtocol runs the real shim.mjs with node against a stand-in
// @tscg/core, end to end through the arm, on all of corpus_v2.
func TestShimProtocol(t *testing.T) {
	testenv.Node(t)
	reg := arms.NewRegistry()
	if err := reg.Register(NewTSCGAt(shimDir(t, fakeCore))); err != nil {
		t.Fatal(err)
	}
	a, err := reg.Resolve(arms.TSCGName)
	if err != nil {
		t.Fatalf("Resolve with @tscg/core present: %v", err)
	}
	tools := loadCorpus(t)
	listing, err := a.EncodeListing(tools)
	if err != nil {
		t.Fatalf("EncodeListing: %v", err)
	}
	// Every tool is in the listing, in order.
	rest := listing
	for _, tool := range tools {
		i := strings.Index(rest, tool.ID+": ")
		if i < 0 {
			t.Fatalf("tool %s is missing from the listing, or out of order", tool.ID)
		}
		rest = rest[i+len(tool.ID):]
	}
	if n := strings.Count(listing, "[CLOSURE:"); n != len(tools) {
		t.Errorf("listing holds %d compiled tools, want %d", n, len(tools))
	}
	// On a sample (each tool costs a node start): a tool alone compiles to
	// the same text as in a listing, and its index metadata rebuilds that
	// text exactly.
	sample := []config.Tool{tools[0], tools[3], tools[27], tools[len(tools)-1]}
	parts := make([]string, len(sample))
	for i, tool := range sample {
		one, err := a.EncodeTool(tool)
		if err != nil {
			t.Fatalf("EncodeTool(%s): %v", tool.ID, err)
		}
		parts[i] = one
		md, err := a.EncodeIndexMetadata(tool)
		if err != nil {
			t.Fatal(err)
		}
		if md.Name != tool.Name || md.ServerName != tool.Server || !strings.Contains(md.ParamsJSON, "[CLOSURE:") {
			t.Errorf("metadata of %s: %+v", tool.ID, md)
		}
		if rebuilt := tool.ID + ": " + md.Description + "\n" + md.ParamsJSON; rebuilt != one {
			t.Errorf("metadata of %s does not rebuild the encoding:\ngot  %q\nwant %q", tool.ID, rebuilt, one)
		}
	}
	sampleListing, err := a.EncodeListing(sample)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(parts, arms.ListingSeparator); sampleListing != want {
		t.Errorf("listing differs from the joined per-tool encodings:\ngot  %q\nwant %q", sampleListing, want)
	}
	// A compiler error names the tool and fails the listing.
	bad := config.Tool{ID: "x:bad", Server: "x", Name: "bad", Description: "FAIL here"}
	if _, err := a.EncodeListing([]config.Tool{tools[0], bad}); err == nil || !strings.Contains(err.Error(), `compiling tool "x:bad": cannot compile x:bad`) {
		t.Errorf("got %v, want the compiler's error naming x:bad", err)
	}
}

// TestShimRawProtocol feeds the shim lines the arm never sends.
func TestShimRawProtocol(t *testing.T) {
	testenv.Node(t)
	r := NewNodeRunner(shimDir(t, fakeCore), Options{})
	in := "not json\n\n" + `{"tool":{}}` + "\n" + `{"tool_id":"a:b","tool":{"name":"a:b","description":"d","input_schema":{"type":"object","properties":{}}}}` + "\n"
	out, err := r.Run(context.Background(), []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	want := []string{
		`{"tool_id":null,"error":"input is not JSON:`,
		`{"tool_id":null,"error":"each input line needs a string \"tool_id\" and an object \"tool\""}`,
		`{"tool_id":"a:b","encoded":"a:b: d\n[CLOSURE:a:b()]"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(lines), lines, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %s, want it to start with %s", i, lines[i], want[i])
		}
	}
}

func TestShimBrokenCore(t *testing.T) {
	testenv.Node(t)
	tests := []struct{ name, core, wantErr string }{
		{"no compress export", `export const x = 1;`, "does not export a compress function"},
		{"module throws on load", `throw new Error("boom at load");`, "boom at load"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewTSCGAt(shimDir(t, tc.core))
			_, err := a.EncodeTool(config.Tool{ID: "a:b", Server: "a", Name: "b"})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestShimHangIsKilled: a compiler that never answers is killed when the
// run's time is up, and the run says why.
func TestShimHangIsKilled(t *testing.T) {
	testenv.Node(t)
	r := NewNodeRunner(shimDir(t, `export function compress() { return new Promise(() => {}); }
setInterval(() => {}, 1000);`), Options{Timeout: 500 * time.Millisecond})
	_, err := r.Run(context.Background(), []byte(`{"tool_id":"a:b","tool":{"name":"a:b","description":"","input_schema":{}}}`+"\n"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Run(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
	a := arms.NewTSCG(r)
	if _, err := a.EncodeListingContext(ctx, []config.Tool{{ID: "a:b", Server: "a", Name: "b"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("EncodeListingContext with a cancelled context: got %v, want context.Canceled", err)
	}
}

func TestLoadResultFixtures(t *testing.T) {
	set, err := LoadResultFixtures(filepath.Join(testenv.Datasets(t), "result_fixtures_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Results) != 6 {
		t.Errorf("got %d results, want 6", len(set.Results))
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	doc := `{"captured":"2026-01-01","fixture_id":"t","results":[{"tool_id":"a:b","payload_class_hint":"tabular","payload":"text"}]}`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadResultFixtures(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `results[0] (tool_id "a:b")`) {
		t.Errorf("got %v, want an error naming the file and the record", err)
	}
	if _, err := LoadResultFixtures(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
}
