package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The MCP conformance suite's server scenarios (npm
// @modelcontextprotocol/conformance) run against the Go SDK's conformance
// everything-server alone, then against mcproxy in front of it with
// "prefix": "" (so the scenarios find the names they expect), in direct mode
// and in retrieve mode. Every scenario the reference passes alone must pass
// through mcproxy: no list of expected failures (issue #15).

// conformanceServerPkg is the Go SDK's conformance server; go.mod pins the
// module (v1.8.0) through a tool directive, so the build is reproducible.
const conformanceServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

var (
	refServerOnce sync.Once
	refServerBin  string
	refServerErr  error
)

// referenceServer builds the Go SDK's conformance everything-server once.
func referenceServer(t testing.TB) string {
	t.Helper()
	refServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcproxy-conformance-")
		if err != nil {
			refServerErr = err
			return
		}
		refServerBin = filepath.Join(dir, "everything-server")
		out, err := exec.Command("go", "build", "-o", refServerBin, conformanceServerPkg).CombinedOutput()
		if err != nil {
			refServerErr = fmt.Errorf("building %s: %v\n%s", conformanceServerPkg, err, out)
		}
	})
	if refServerErr != nil {
		t.Fatal(refServerErr)
	}
	return refServerBin
}

// needNode skips the test, saying why, where Node.js is not installed.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("skipping: the MCP conformance suite and the TypeScript SDK need Node.js, and node is not on PATH (%v)", err)
	}
}

// runConformance runs every active server scenario against url and returns,
// per scenario, the checks that failed (an empty list: it passed).
func runConformance(t *testing.T, url string) map[string][]string {
	t.Helper()
	suite := testenv.Conformance(t)
	return runSuite(t, url, suite[0], append(suite[1:], "server", "--url", url)...)
}

// runSuite is runConformance for the suite that the command name with
// args runs (it adds "-o DIR").
func runSuite(t *testing.T, url, name string, args ...string) map[string][]string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, "-o", out)...)
	cmd.Dir = out
	log, err := cmd.CombinedOutput()
	// The suite exits non-zero when a scenario fails; the checks say which.
	if ctx.Err() != nil {
		t.Fatalf("conformance suite against %s: %v\n%s", url, ctx.Err(), log)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "server-*", "checks.json"))
	if len(dirs) == 0 {
		t.Fatalf("conformance suite against %s wrote no results (%v):\n%s", url, err, log)
	}
	results := map[string][]string{}
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		scenario := scenarioName(filepath.Base(filepath.Dir(path)))
		failed := []string{}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				failed = append(failed, c.ID+": "+c.ErrorMessage)
			}
		}
		results[scenario] = failed
	}
	return results
}

// scenarioName turns a result directory ("server-prompts-list-2026-12-01T…")
// into its scenario ("prompts-list").
func scenarioName(dir string) string {
	name := strings.TrimPrefix(dir, "server-")
	if i := strings.Index(name, "-20"); i > 0 {
		name = name[:i]
	}
	return name
}

// passingAlone is the scenarios that passed in alone, sorted; fewer than
// least fails t (the suite or the server is broken).
func passingAlone(t *testing.T, alone map[string][]string, least int) []string {
	t.Helper()
	var baseline []string
	for scenario, failed := range alone {
		if len(failed) == 0 {
			baseline = append(baseline, scenario)
		}
	}
	slices.Sort(baseline)
	if len(baseline) < least {
		t.Fatalf("the reference server passes only %d scenarios alone (%v); the suite or the server is broken", len(baseline), alone)
	}
	t.Logf("the reference server alone passes %d scenarios: %s", len(baseline), strings.Join(baseline, ", "))
	return baseline
}

// checkThrough fails t for each scenario of baseline, but those in skip,
// that did not pass in got (the run through mcproxy).
func checkThrough(t *testing.T, baseline []string, got map[string][]string, skip []string) {
	t.Helper()
	for _, scenario := range baseline {
		failed, ran := got[scenario]
		switch {
		case slices.Contains(skip, scenario):
		case !ran:
			t.Errorf("%s: did not run through mcproxy, want it to pass as it does alone", scenario)
		case len(failed) > 0:
			t.Errorf("%s: passes alone, fails through mcproxy: %s", scenario, strings.Join(failed, "; "))
		}
	}
}

// conformance0116 is the suite's 0.1.16 release, installed beside the
// pinned 0.1.13 under an npm alias (package.json); it needs Node 22
// (testenv.Node22). Issue 29: both releases' results stay as they are.
const (
	conformance0116Pkg     = "conformance-0116"
	conformance0116Version = "0.1.16"
)

func TestConformanceServerScenarios(t *testing.T) {
	t.Parallel()
	needNode(t)
	ref := referenceServer(t)
	for _, suite := range []struct {
		version string
		// run runs the release's server scenarios against url.
		run func(t *testing.T, url string) map[string][]string
	}{
		{testenv.ConformanceVersion, runConformance},
		{conformance0116Version, func(t *testing.T, url string) map[string][]string {
			index := filepath.Join(testenv.NodePackage(t, conformance0116Pkg, conformance0116Version), "dist", "index.js")
			return runSuite(t, url, testenv.Node22(t), index, "server", "--url", url)
		}},
	} {
		t.Run(suite.version, func(t *testing.T) {
			t.Parallel()
			testConformanceServerScenarios(t, ref, suite.run)
		})
	}
}

// testConformanceServerScenarios is TestConformanceServerScenarios for one
// release of the suite, which run runs.
func testConformanceServerScenarios(t *testing.T, ref string, run func(t *testing.T, url string) map[string][]string) {
	// The reference alone, over streamable HTTP. -stateless=false keeps the
	// sessions that server-to-client requests (sampling, elicitation) need,
	// as the Go SDK's own conformance script does.
	addr := freeAddr(t)
	p := startProc(t, "everything-server", exec.Command(ref, "-http="+addr, "-stateless=false"))
	waitListening(t, addr, p)
	baseline := passingAlone(t, run(t, "http://"+addr+"/"), 20)

	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": ref, "prefix": ""},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "30s",
	})

	check := func(t *testing.T, got map[string][]string) {
		t.Helper()
		checkThrough(t, baseline, got, nil)
	}

	t.Run("direct", func(t *testing.T) {
		base, _ := serveHTTP(t, config, "--mode", "direct")
		check(t, run(t, base+"/mcp"))
	})

	t.Run("retrieve", func(t *testing.T) {
		base, _ := serveHTTP(t, config, "--mode", "retrieve")
		target, err := url.Parse(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		// The scenarios call the reference server's tools by name; in
		// retrieve mode mcproxy lists only its meta tools, so this adapter
		// (test code, not part of mcproxy) turns each tools/call of a
		// non-meta tool into call_tool with the id "everything:<name>",
		// keeping the request's _meta (progress token). Everything else,
		// prompts, resources, completion, logging and the server's own
		// requests on the stream, passes through untouched.
		adapter := httptest.NewServer(callToolAdapter(target, "everything"))
		t.Cleanup(adapter.Close)
		check(t, run(t, adapter.URL+"/mcp"))
	})
}

// metaTools are the tools mcproxy itself serves in retrieve mode.
var metaTools = []string{"retrieve_tools", "call_tool", "describe_tool", "Compress", "read_archive", "read_result"}

// callToolAdapter proxies to target, rewriting tools/call requests for
// upstream tools into call_tool requests for server's tool.
func callToolAdapter(target *url.URL, server string) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Host = target.Host
			if r.In.Method != http.MethodPost || r.In.Body == nil {
				return
			}
			body, err := io.ReadAll(r.In.Body)
			if err != nil {
				return
			}
			rewritten := rewriteToolCalls(body, server)
			if !bytes.Equal(rewritten, body) && r.Out.Header.Get("Mcp-Name") != "" {
				// 2026-07-28 names the tool in a header too, which
				// must match the body's.
				r.Out.Header.Set("Mcp-Name", "call_tool")
			}
			body = rewritten
			r.Out.Body = io.NopCloser(bytes.NewReader(body))
			r.Out.ContentLength = int64(len(body))
			r.Out.Header.Set("Content-Length", strconv.Itoa(len(body)))
		},
		FlushInterval: -1, // stream SSE answers as they come
	}
	return rp
}

// rewriteToolCalls rewrites one JSON-RPC message or a batch.
func rewriteToolCalls(body []byte, server string) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i, m := range batch {
			batch[i] = rewriteToolCall(m, server)
		}
		out, _ := json.Marshal(batch)
		return out
	}
	return rewriteToolCall(body, server)
}

func rewriteToolCall(msg []byte, server string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil {
		return msg
	}
	var method string
	_ = json.Unmarshal(m["method"], &method)
	if method != "tools/call" {
		return msg
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil {
		return msg
	}
	var name string
	_ = json.Unmarshal(params["name"], &name)
	if slices.Contains(metaTools, name) {
		return msg
	}
	args := params["arguments"]
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	inner, _ := json.Marshal(map[string]any{"name": server + ":" + name, "arguments": args})
	params["name"], _ = json.Marshal("call_tool")
	params["arguments"] = inner
	m["params"], _ = json.Marshal(params)
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// TestTypeScriptClientCatalog drives mcproxy (retrieve mode) in front of
// server-everything with the TypeScript SDK client: prompts, completion,
// resources, templates, resource_links and a subscription seen by one of two
// sessions only (testdata/catalog.mjs).
func TestTypeScriptClientCatalog(t *testing.T) {
	t.Parallel()
	needNode(t)
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
	})
	base, _ := serveHTTP(t, config)
	arg, _ := json.Marshal(map[string]any{"url": base + "/mcp", "server": "everything"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "catalog.mjs"), string(arg)).CombinedOutput()
	if err != nil {
		t.Fatalf("catalog.mjs (TypeScript SDK client): %v\n%s", err, out)
	}
	t.Logf("catalog.mjs:\n%s", out)
}
