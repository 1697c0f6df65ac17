package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
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

// warmPair builds the upstreams "test" and "extra" and a first front whose
// warm file holds only test's tools: extra was still connecting when it
// wrote the file (issue 30's flaky start: a second mcproxy read the file of
// a first one that had not seen every server come up yet).
func warmPair(t *testing.T) (up *testUpstreams, path string, setState func(server string, st upstream.State)) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "index", "tools.json")
	up = newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer(), "extra": newUpstreamServer()})
	setState = func(server string, st upstream.State) {
		up.mu.Lock()
		defer up.mu.Unlock()
		if st == upstream.StateReady {
			delete(up.down, server)
			return
		}
		up.down[server] = &upstream.DownError{Server: server, State: st, LastError: "not yet"}
	}
	setState("extra", upstream.StateConnecting)
	first, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WarmCatalog: path})
	if err != nil {
		t.Fatal(err)
	}
	first.Resync()
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"test:echo"`) || strings.Contains(string(data), `"extra:echo"`) {
		t.Fatalf("tool lists saved by the first run: got %q, %v; want test's and not extra's", data, err)
	}
	setState("test", upstream.StateConnecting)
	return up, path, setState
}

// warmFront is a front that warm-starts from path, held before Started.
func warmFront(t *testing.T, up *testUpstreams, path string, grace time.Duration) (*Server, *client.Client) {
	t.Helper()
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WarmCatalog: path, WaitForStart: true, StartGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WarmStart(); err != nil {
		t.Fatal(err)
	}
	return s, connect(t, &front{Server: s}, "inprocess", nil)
}

// TestWarmStartWaitsForServersTheFileLacks: a warm start from a file that
// lacks a connecting server waits for it (within the start grace) instead
// of answering at once without its tools.
func TestWarmStartWaitsForServersTheFileLacks(t *testing.T) {
	t.Parallel()
	up, path, setState := warmPair(t)
	s, c := warmFront(t, up, path, time.Hour)
	// extra comes up once the front has looked at the upstreams three
	// times: the call is waiting for it (an answer without waiting looks
	// once).
	var looks int
	up.onStatus = func() {
		if looks++; looks == 3 {
			setState("extra", upstream.StateReady)
			s.ToolsChanged("extra", up.serverTools("extra"))
		}
	}
	got := text(callTool(t, c, ToolRetrieve, map[string]any{"query": "echo a message", "limit": 10}))
	if !strings.Contains(got, "extra:echo(") || strings.Contains(got, "extra (connecting") || !strings.Contains(got, "test (connecting; ") {
		t.Errorf("first retrieve_tools while extra connects: got %q, want extra's tools (it was waited for) and test marked as from the last run", got)
	}
}

// TestWarmStartSlowServers: a server still connecting when a start grace
// ran out is saved as slow, and the next start does not wait for it again;
// once its tools come it is no longer slow.
func TestWarmStartSlowServers(t *testing.T) {
	t.Parallel()
	up, path, setState := warmPair(t)
	_, c := warmFront(t, up, path, time.Nanosecond)
	if got := text(callTool(t, c, ToolRetrieve, map[string]any{"query": "echo a message"})); !strings.Contains(got, "extra (connecting; its tools are not searched)") {
		t.Errorf("retrieve_tools after the grace: got %q, want extra named as connecting", got)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), `"slow":["extra"]`) {
		t.Fatalf("file after the grace ran out on extra: got %q, %v; want extra listed as slow", data, err)
	}

	s, c := warmFront(t, up, path, time.Hour)
	var looks int
	up.onStatus = func() {
		// Waiting for extra would look again and again; it then fails,
		// so that the call ends.
		if looks++; looks == 3 {
			setState("extra", upstream.StateDown)
		}
	}
	got := text(callTool(t, c, ToolRetrieve, map[string]any{"query": "echo a message"}))
	up.onStatus = nil
	if looks != 2 || !strings.Contains(got, "extra (connecting; its tools are not searched)") {
		t.Errorf("first retrieve_tools of the next start: the front looked at the upstreams %d times (want 2: settled at once) and answered %q, want extra named as connecting", looks, got)
	}

	setState("extra", upstream.StateReady)
	s.ToolsChanged("extra", up.serverTools("extra"))
	if data, err := os.ReadFile(path); err != nil || strings.Contains(string(data), `"slow"`) || !strings.Contains(string(data), `"extra:echo"`) {
		t.Errorf("file once extra is up: got %q, %v; want its tools and no slow list", data, err)
	}
}
