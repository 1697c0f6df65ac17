package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// TestWarmStart follows one server through a restart: the first front saves
// its tools; the second, while the server is connecting, answers from them
// and says so; when the server turns out not to connect (here in a state
// the manager may report one day, rendered as it is) its last known tools
// are no longer offered; once it is live, no line is added.
func TestWarmStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index", "tools.json")
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	first, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WarmCatalog: path})
	if err != nil {
		t.Fatal(err)
	}
	first.Resync()
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"test:echo"`) {
		t.Fatalf("tool lists saved by the first run: got %q, %v; want test:echo in them", data, err)
	}

	setState := func(st upstream.State) {
		up.mu.Lock()
		defer up.mu.Unlock()
		if st == upstream.StateReady {
			delete(up.down, "test")
			return
		}
		up.down["test"] = &upstream.DownError{Server: "test", State: st, LastError: "not yet"}
	}
	setState(upstream.StateConnecting)
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WarmCatalog: path, WaitForStart: true})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.WarmStart(); n != 1 || err != nil {
		t.Fatalf("WarmStart: got %d, %v; want 1 server loaded", n, err)
	}
	c := connect(t, &front{Server: s}, "inprocess", nil)
	retrieve := func() string {
		return text(callTool(t, c, ToolRetrieve, map[string]any{"query": "echo a message"}))
	}

	got := retrieve()
	if !strings.HasPrefix(got, "test:echo(") || !strings.HasSuffix(got,
		"Not connected right now: test (connecting; 3 of the matches above are from its tool list of the last run, and call_tool waits for it to connect).") {
		t.Errorf("retrieve_tools while test connects: got %q, want test:echo and the line marking it as from the last run", got)
	}
	described := text(callTool(t, c, ToolDescribe, map[string]any{"names": []string{"test:echo"}}))
	if !strings.Contains(described, `"inputSchema"`) || !strings.Contains(described, `\"test\" is still connecting`) {
		t.Errorf("describe_tool while test connects: got %q, want its schema and a note", described)
	}

	setState(upstream.State("needs sign-in"))
	got = retrieve()
	if strings.Contains(got, "test:echo(") || !strings.Contains(got, "Not connected right now: test (needs sign-in; its tools are not searched).") {
		t.Errorf("retrieve_tools once test needs sign-in: got %q, want no test tools and the line naming its state", got)
	}

	setState(upstream.StateReady)
	s.Resync()
	s.Started()
	got = retrieve()
	if !strings.HasPrefix(got, "test:echo(") || strings.Contains(got, "Not connected") {
		t.Errorf("retrieve_tools once test is live: got %q, want test:echo and no line", got)
	}
}

// TestWarmStartBadFile: a damaged file is reported, loads nothing and is
// replaced by the next live tool list.
func TestWarmStartBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"servers":`), 0o600); err != nil {
		t.Fatal(err)
	}
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WarmCatalog: path})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.WarmStart(); n != 0 || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WarmStart over a damaged file: got %d, %v; want 0 and an error naming the file", n, err)
	}
	s.Resync()
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"test:echo"`) {
		t.Errorf("after the server came up: got %q, %v; want the file rewritten with test:echo", data, err)
	}
}

// TestCallBeforeToolsListed: a call_tool made while its server has just
// come up, before its tool list reached the catalog, goes to the server
// (which knows its tools) instead of being refused as unknown.
func TestCallBeforeToolsListed(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, &front{Server: s}, "inprocess", nil)
	res := callTool(t, c, ToolCall, map[string]any{"name": "test:echo", "arguments": map[string]any{"message": "hi"}})
	if res.IsError || text(res) != "Echo: hi" {
		t.Errorf("call_tool before the catalog lists test: got %q (isError %v), want the echo", text(res), res.IsError)
	}
}
