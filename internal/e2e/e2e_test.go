package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// fsReadTool matches the filesystem server's tools that read a file's contents.
var fsReadTool = regexp.MustCompile(`filesystem:read_(text_)?file\b`)

// TestProxyEndToEnd is the central acceptance test: mcproxy, built from
// source, fronts real npm servers over all three upstream transports and is
// driven by mcp-go's client over stdio, streamable HTTP and SSE, and by the
// official TypeScript SDK over stdio and streamable HTTP.
func TestProxyEndToEnd(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	base, _ := serveHTTP(t, fx.config)
	// The stdio mcproxys below share this one's data_dir and warm-start
	// from the tool lists it saves there: once it is ready the file holds
	// every server's, so their first retrieve_tools answers from it. Before
	// that the file lacks the servers still connecting, which a stdio
	// mcproxy waits for only one start grace (on a loaded machine, not long
	// enough for filesystem).
	waitFor(t, 90*time.Second, "/readyz of the HTTP mcproxy", func() bool { code, _ := get(t, base, "/readyz", false); return code == http.StatusOK })
	if _, body := get(t, base, "/readyz", false); body != "ready: 5 of 5 servers ready\n" {
		t.Fatalf("/readyz of the HTTP mcproxy: got %q, want every server ready", body)
	}

	t.Run("mcp-go/stdio", func(t *testing.T) {
		c := startStdio(t, "serve", "--stdio", "--config", fx.config)
		initialize(t, c)
		smoke(t, c, fx, "stdio")
		// The stdio connection got a noa session of its own for this run.
		trs, _ := filepath.Glob(filepath.Join(fx.cfg["data_dir"].(string), "sessions", "stdio-*", "transcript.jsonl"))
		if len(trs) == 0 {
			t.Errorf("no stdio-* session transcript under %s, want this run's noa session", fx.cfg["data_dir"])
		}
	})
	t.Run("mcp-go/streamable-http", func(t *testing.T) {
		c := startHTTP(t, base+"/mcp")
		initialize(t, c)
		smoke(t, c, fx, "streamable-http")
	})
	t.Run("mcp-go/sse", func(t *testing.T) {
		c, err := client.NewSSEMCPClient(base + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// The SSE stream lives as long as Start's context.
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		smoke(t, c, fx, "sse")
	})
	t.Run("typescript-sdk/stdio", func(t *testing.T) {
		runSmokeScript(t, map[string]any{
			"transport": "stdio", "command": binary, "args": []string{"serve", "--stdio", "--config", fx.config},
			"fsDir": fx.fsDir, "tag": "stdio",
		})
	})
	t.Run("typescript-sdk/streamable-http", func(t *testing.T) {
		runSmokeScript(t, map[string]any{"transport": "http", "url": base + "/mcp", "fsDir": fx.fsDir, "tag": "http"})
	})
}

// smoke runs the checks through one connected client; tag keeps the
// files and entities of different transports apart.
func smoke(t *testing.T, c *client.Client, fx *fixture, tag string) {
	t.Helper()
	if got, want := sorted(listTools(t, c)), []string{"Compress", "call_tool", "describe_tool", "read_archive", "retrieve_tools"}; !cmp.Equal(got, want) {
		t.Fatalf("tools/list: got %v, want %v", got, want)
	}

	res := callTool(t, c, "retrieve_tools", map[string]any{"query": "read the contents of a file", "limit": 3})
	if res.IsError || !fsReadTool.MatchString(text(res)) {
		t.Errorf("retrieve_tools top 3: got %q (isError %v), want a filesystem read tool", text(res), res.IsError)
	}
	t.Logf("retrieve_tools top 3 for %q:\n%s", "read the contents of a file", text(res))

	path := filepath.Join(fx.fsDir, "go-"+tag+".txt")
	content := "written through mcproxy over " + tag
	proxied(t, c, "filesystem:write_file", map[string]any{"path": path, "content": content})
	if got := proxied(t, c, "filesystem:read_text_file", map[string]any{"path": path}); got != content {
		t.Errorf("read_text_file: got %q, want %q", got, content)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Errorf("file on disk: got %q (%v), want %q", got, err, content)
	}

	for _, server := range []string{"everything", "everything_http", "everything_sse"} {
		msg := "hello " + tag + " via " + server
		if got := proxied(t, c, server+":echo", map[string]any{"message": msg}); !strings.Contains(got, msg) {
			t.Errorf("%s:echo: got %q, want it to echo %q", server, got, msg)
		}
	}

	entity := "entity-" + tag
	proxied(t, c, "memory:create_entities", map[string]any{"entities": []any{
		map[string]any{"name": entity, "entityType": "test", "observations": []any{"created over " + tag}},
	}})
	if got := proxied(t, c, "memory:read_graph", map[string]any{}); !strings.Contains(got, entity) {
		t.Errorf("memory:read_graph: got %q, want it to contain %q", got, entity)
	}

	// Errors a model can act on.
	res = callTool(t, c, "call_tool", map[string]any{"name": "filesystem:read_txt_file", "arguments": map[string]any{"path": path}})
	if !res.IsError || !strings.Contains(text(res), "filesystem:read_text_file") || !strings.Contains(text(res), "retrieve_tools") {
		t.Errorf("unknown tool: got %q (isError %v), want a tool error suggesting filesystem:read_text_file", text(res), res.IsError)
	}
	res = callTool(t, c, "describe_tool", map[string]any{"names": []any{"filesystem:read_text_file"}})
	var described []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal([]byte(upstreamText(res)), &described); err != nil || len(described) != 1 || !strings.Contains(string(described[0].InputSchema), `"path"`) {
		t.Errorf("describe_tool: got %q (%v), want the full schema of read_text_file", text(res), err)
	}
	// Misnamed arguments: whichever way the real server refuses them (a
	// tool error from its validator, or JSON-RPC invalid params), the model
	// is told which names to fix.
	res = callTool(t, c, "call_tool", map[string]any{"name": "filesystem:read_text_file", "arguments": map[string]any{"pth": path}})
	if want := `"path" is required and missing; "pth" is not one of its parameters`; !res.IsError || !strings.Contains(text(res), want) {
		t.Errorf("misnamed argument: got %q (isError %v), want a tool error containing %q", text(res), res.IsError, want)
	}
	// The upstream's own tool errors pass through with isError.
	res = callTool(t, c, "call_tool", map[string]any{"name": "filesystem:read_text_file", "arguments": map[string]any{"path": "/etc/passwd"}})
	if !res.IsError {
		t.Errorf("reading outside the allowed directory: got %q, want the filesystem server's tool error", text(res))
	}
	if strings.Contains(text(res), "do not fit") {
		t.Errorf("reading outside the allowed directory: got %q, want no argument hint (the arguments fit)", text(res))
	}
}

func runSmokeScript(t *testing.T, opts map[string]any) {
	t.Helper()
	arg, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "smoke.mjs"), string(arg))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("smoke.mjs (TypeScript SDK client): %v\n%s", err, out)
	}
	t.Logf("smoke.mjs:\n%s", out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestBatchFromTypeScriptSDK sends a JSON-RPC batch (protocol 2025-03-26)
// with the official TypeScript SDK's HTTP transport: every request in it is
// answered, a tool call through a real upstream included.
func TestBatchFromTypeScriptSDK(t *testing.T) {
	fx := newFixture(t)
	base, _ := serveHTTP(t, fx.config)
	arg, err := json.Marshal(map[string]any{"url": base + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "batch.mjs"), string(arg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("batch.mjs (TypeScript SDK client): %v\n%s", err, stderr.Bytes())
	}
	var got map[string]struct {
		Result *mcp.CallToolResult `json:"result"`
		Error  json.RawMessage     `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("batch.mjs printed %q: %v", out, err)
	}
	for id, want := range map[string]string{"3": "everything:echo", "4": "Echo: sent in a batch"} {
		r, ok := got[id]
		if !ok || r.Error != nil || r.Result == nil || !strings.Contains(text(r.Result), want) {
			t.Errorf("response %s to the batch: got %+v, want a result containing %q", id, r, want)
		}
	}
	if r, ok := got["2"]; !ok || r.Error != nil {
		t.Errorf("ping in the batch: got %+v, want a result", r)
	}
}

// TestDirectModeStdio exposes every upstream tool as server__tool.
func TestDirectModeStdio(t *testing.T) {
	fx := newFixture(t)
	c := startStdio(t, "serve", "--stdio", "--mode", "direct", "--config", fx.config)
	initialize(t, c)
	names := listTools(t, c)
	for _, want := range []string{"filesystem__read_text_file", "everything__echo", "everything_http__echo", "everything_sse__echo", "memory__read_graph"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list in direct mode: got %v, want it to include %s", names, want)
		}
	}
	for _, want := range []string{"Compress", "read_archive"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list in direct mode: got %v, want noa's %s beside the upstream tools", names, want)
		}
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, n := range names {
		if !valid.MatchString(n) {
			t.Errorf("tool name %q is not valid for every client", n)
		}
	}
	res := callTool(t, c, "everything__echo", map[string]any{"message": "direct"})
	if res.IsError || !strings.Contains(upstreamText(res), "direct") || refOf(res) == "" {
		t.Errorf("everything__echo: got %q (isError %v), want the echo and noa's ref tag", text(res), res.IsError)
	}
	// A misnamed argument: the hint speaks of "this tool" (the client does
	// not know it as server:tool) and offers no describe_tool.
	res = callTool(t, c, "everything__echo", map[string]any{"msg": "direct"})
	if want := `the arguments do not fit this tool: "message" is required and missing; "msg" is not one of its parameters`; !res.IsError || !strings.Contains(text(res), want) || strings.Contains(text(res), "describe_tool") {
		t.Errorf("misnamed argument in direct mode: got %q (isError %v), want a tool error containing %q and no describe_tool", text(res), res.IsError, want)
	}
}

// TestHTTPSafety checks the HTTP guard on the real binary.
func TestHTTPSafety(t *testing.T) {
	dir := t.TempDir()
	const token = "e2e-s3cret-token"
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(`{"mcpServers": {}, "auth_token": "`+token+`", "data_dir": "`+filepath.Join(dir, "data")+`", "log_level": "debug"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, p := serveHTTP(t, config)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`

	tests := []struct {
		name, method, path string
		header             map[string]string
		host               string
		want               int
	}{
		{"foreign origin", "POST", "/mcp", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer " + token}, "", 403},
		{"foreign origin on sse", "GET", "/sse", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer " + token}, "", 403},
		{"foreign host", "POST", "/mcp", map[string]string{"Authorization": "Bearer " + token}, "evil.example", 403},
		{"missing bearer", "POST", "/mcp", nil, "", 401},
		{"wrong bearer", "POST", "/mcp", map[string]string{"Authorization": "Bearer nope"}, "", 401},
		{"missing bearer on message", "POST", "/message?sessionId=x", nil, "", 401},
		{"right bearer", "POST", "/mcp", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://localhost:6274"}, "", 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r *strings.Reader
			if tc.method == "POST" {
				r = strings.NewReader(body)
			} else {
				r = strings.NewReader("")
			}
			req, err := http.NewRequest(tc.method, base+tc.path, r)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("got %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}

	t.Run("mcp-go client with the token", func(t *testing.T) {
		c := startHTTP(t, base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		initialize(t, c)
		res := callTool(t, c, "retrieve_tools", map[string]any{"query": "anything"})
		if res.IsError || !strings.Contains(text(res), "No tools match") {
			t.Errorf("retrieve_tools with no upstreams: got %q, want a no-match answer", text(res))
		}
	})

	if strings.Contains(p.output(), token) {
		t.Errorf("mcproxy's log contains the auth token:\n%s", p.output())
	}
}

// TestCommandLine covers the subcommands a newcomer meets first.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	t.Run("version", func(t *testing.T) {
		code, out, _ := runBinary(t, 30*time.Second, "version")
		if code != 0 || !strings.HasPrefix(out, "mcproxy ") {
			t.Errorf("version: got exit %d and %q, want 0 and a version line", code, out)
		}
	})
	t.Run("malformed config names the field", func(t *testing.T) {
		// A bad key of mcproxy's own refuses the file.
		bad := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(bad, []byte(`{"call_timeout": "soon", "mcpServers": {"git": {"command": "git-mcp"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"serve", "--config", bad}, {"search", "x", "--config", bad}} {
			code, out, errOut := runBinary(t, 30*time.Second, args...)
			if code == 0 || !strings.Contains(errOut, "call_timeout") || out != "" {
				t.Errorf("%v: got exit %d, stdout %q, stderr %q; want non-zero, nothing on stdout and the field path on stderr", args, code, out, errOut)
			}
		}
		// A bad field of one server's entry sets that server aside, named
		// with the field (issue 30); with no other server, search says so.
		badServer := filepath.Join(dir, "bad-server.json")
		if err := os.WriteFile(badServer, []byte(`{"mcpServers": {"git": {"command": "git-mcp", "call_timeout": "soon"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runBinary(t, 30*time.Second, "search", "x", "--config", badServer)
		if code == 0 || !strings.Contains(out, "mcpServers.git.call_timeout") || !strings.Contains(out, "misconfigured") || !strings.Contains(errOut, "no server is working") {
			t.Errorf("search with one misconfigured server: got exit %d, stdout %q, stderr %q; want non-zero, the server named misconfigured with the field path, and why on stderr", code, out, errOut)
		}
	})
	t.Run("missing config", func(t *testing.T) {
		code, _, errOut := runBinary(t, 30*time.Second, "serve", "--config", filepath.Join(dir, "nope.json"))
		if code == 0 || !strings.Contains(errOut, "no config file") {
			t.Errorf("got exit %d, stderr %q; want non-zero and a hint", code, errOut)
		}
	})
	t.Run("unknown command", func(t *testing.T) {
		code, _, errOut := runBinary(t, 30*time.Second, "frobnicate")
		if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
			t.Errorf("got exit %d, stderr %q; want 2 and the usage", code, errOut)
		}
	})
	t.Run("search", func(t *testing.T) {
		fsDir := t.TempDir()
		config := writeConfigFile(t, filepath.Join(dir, "search.json"), map[string]any{"mcpServers": map[string]any{
			"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{fsDir}},
			"broken":     map[string]any{"command": filepath.Join(dir, "no-such-server")},
		}})
		code, out, errOut := runBinary(t, 90*time.Second, "search", "read the contents of a file", "--config", config, "--limit", "3")
		// A server is down: the matches are printed, and the exit says a
		// server is not working (issue 18).
		if code != 1 || !strings.Contains(errOut, "1 server(s) not working") {
			t.Fatalf("search: exit %d, want 1 with a server down\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		lines := strings.Split(out, "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], `3 match(es) for "read the contents of a file"`) {
			t.Errorf("search header: got %q", lines[0])
		}
		if !fsReadTool.MatchString(out) {
			t.Errorf("search: got\n%s\nwant a filesystem read tool in the top 3", out)
		}
		if !regexp.MustCompile(`(?m)^  broken \(stdio\): down: .*no-such-server`).MatchString(out) {
			t.Errorf("search: got\n%s\nwant a status line for the broken server", out)
		}
		t.Logf("mcproxy search output:\n%s", out)
	})
	t.Run("search with dense retrieval", func(t *testing.T) {
		// An embeddings provider of our own (a toy model): search waits for
		// the tool vectors before it ranks, and says whether dense retrieval
		// took part; with the provider failing, it says BM25 ranked alone.
		srv := embedtest.New(embedtest.Options{})
		defer srv.Close()
		fsDir := t.TempDir()
		config := writeConfigFile(t, filepath.Join(dir, "dense.json"), map[string]any{
			"mcpServers": map[string]any{"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{fsDir}}},
			"data_dir":   filepath.Join(dir, "dense-data"),
			"embeddings": map[string]any{"url": srv.URL, "model": "toy"},
		})
		code, out, errOut := runBinary(t, 90*time.Second, "search", "read the contents of a file", "--config", config, "--limit", "3")
		if code != 0 {
			t.Fatalf("search: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		used := regexp.MustCompile(`(?m)^Dense retrieval \(toy at .*\): (\d+) of (\d+) tools embedded, fused with BM25\.$`).FindStringSubmatch(out)
		if used == nil || used[1] != used[2] || used[1] == "0" {
			t.Errorf("search with a working provider: got\n%s\nwant a line saying every tool was embedded and fused with BM25", out)
		} else if tools, _ := strconv.Atoi(used[2]); srv.Inputs() < tools+1 {
			t.Errorf("the provider embedded %d texts, want the %d tools and the query", srv.Inputs(), tools)
		}
		srv.SetFault(embedtest.Status500)
		if err := os.RemoveAll(filepath.Join(dir, "dense-data")); err != nil { // no cached vectors
			t.Fatal(err)
		}
		code, out, errOut = runBinary(t, 90*time.Second, "search", "read the contents of a file", "--config", config, "--limit", "3")
		if code != 0 || !fsReadTool.MatchString(out) || !regexp.MustCompile(`(?m)^Dense retrieval \(toy at .*\): unavailable \(.*500.*\); ranked by BM25 alone\.$`).MatchString(out) {
			t.Errorf("search with the provider failing: exit %d, got\n%s%s\nwant BM25's ranking and a line saying dense retrieval was unavailable", code, out, errOut)
		}
	})
	t.Run("search with config synonyms", func(t *testing.T) {
		// No filesystem tool says "dossier"; a synonym group in config.json
		// ties it to "directory", which several do.
		fsDir := t.TempDir()
		servers := map[string]any{"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{fsDir}}}
		plain := writeConfigFile(t, filepath.Join(dir, "plain.json"), map[string]any{"mcpServers": servers})
		withSyn := writeConfigFile(t, filepath.Join(dir, "synonyms.json"), map[string]any{"mcpServers": servers,
			"synonyms": [][]string{{"dossier", "directory"}}})
		code, out, errOut := runBinary(t, 90*time.Second, "search", "dossier", "--config", withSyn, "--limit", "3")
		if code != 0 {
			t.Fatalf("search: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if !regexp.MustCompile(`(?m)^ *1\. +[0-9.]+ +filesystem:[a-z_]*director(y|ies)\b`).MatchString(out) {
			t.Errorf("search dossier with synonyms [dossier directory]: got\n%s\nwant a filesystem directory tool first", out)
		}
		code, out, errOut = runBinary(t, 90*time.Second, "search", "dossier", "--config", plain, "--limit", "3")
		if code != 0 || !strings.HasPrefix(out, "0 match(es)") {
			t.Errorf("search dossier without the group: exit %d, got\n%s%s\nwant 0 matches", code, out, errOut)
		}
	})
}
