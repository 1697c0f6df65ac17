package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// A client connected to a running mcproxy sees servers added, changed and
// removed in the config file, each announced by tools/list_changed, on one
// session that stays up throughout; an invalid edit of mcproxy's own keys
// is refused and changes nothing, one of a server's entry sets that server
// aside.
func TestLiveReload(t *testing.T) {
	memory := map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": t.TempDir() + "/memory.jsonl"}}
	everything := map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")}
	cfg := map[string]any{"mode": "direct", "noa": map[string]any{"enabled": false}, "mcpServers": map[string]any{"memory": memory}}
	s := startServe(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The client keeps the standalone GET stream open, as the TypeScript
	// SDK does: without it, mcp-go's server can deliver list_changed only
	// in the response of a POST in flight, and drops one that a POST took
	// just as it ended (mcp-go v1.2.1; seen once in CI).
	c, err := client.NewStreamableHttpClient(s.base+"/mcp", transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var changed atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tools/list_changed" {
			changed.Add(1)
		}
	})
	startClient(ctx, t, c)
	sessionID := c.GetSessionId()
	tools := func() []string {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list on the same session: %v", err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	dump := func() string { return "tools: " + strings.Join(tools(), ", ") + "\nstderr:\n" + s.stderr.String() }
	has := func(name string) func() bool { return func() bool { return slices.Contains(tools(), name) } }
	not := func(f func() bool) func() bool { return func() bool { return !f() } }
	// The listening stream that carries list_changed opens after
	// initialize; wait for the first tools so it is up before the edits.
	eventually(t, "memory's tools at start", 30*time.Second, has("memory__create_entities"), dump)

	step := func(what string, edit func(), cond func() bool) {
		t.Helper()
		before := changed.Load()
		edit()
		writeJSON(t, s.config, cfg)
		eventually(t, what, 60*time.Second, cond, dump)
		eventually(t, what+": list_changed sent", 10*time.Second, func() bool { return changed.Load() > before }, dump)
	}
	servers := cfg["mcpServers"].(map[string]any)
	step("server added", func() { servers["everything"] = everything }, has("everything__echo"))
	step("server changed", func() { memory["disabled_tools"] = []string{"create_entities"} },
		func() bool { return !has("memory__create_entities")() && has("memory__read_graph")() })
	step("server removed", func() { delete(servers, "everything") }, not(has("everything__echo")))
	step("server disabled", func() { memory["enabled"] = false }, not(has("memory__read_graph")))

	// An invalid edit of mcproxy's own keys: refused, logged, and nothing
	// changes.
	step("server enabled again", func() { memory["enabled"] = true }, has("memory__read_graph"))
	before := tools()
	cfg["retrieve_limit"] = "five"
	writeJSON(t, s.config, cfg)
	eventually(t, "invalid edit refused", 10*time.Second, func() bool {
		return strings.Contains(s.stderr.String(), "config change refused") && strings.Contains(s.stderr.String(), "retrieve_limit")
	}, dump)
	if got := tools(); !slices.Equal(got, before) {
		t.Errorf("after an invalid edit: got tools %v, want %v unchanged", got, before)
	}
	delete(cfg, "retrieve_limit")

	// An invalid edit of one server's entry sets that server alone aside
	// (issue 30).
	step("server misconfigured", func() {
		memory["enabled"] = "yes"
		servers["everything"] = everything
	}, func() bool { return has("everything__echo")() && !has("memory__read_graph")() })
	if !strings.Contains(s.stderr.String(), "mcpServers.memory.enabled") {
		t.Errorf("the misconfigured server's problem is not logged:\n%s", s.stderr.String())
	}
	if got := c.GetSessionId(); got != sessionID {
		t.Errorf("session id: got %q, want %q kept across reloads", got, sessionID)
	}
}

// In retrieve mode, `mcproxy add` and `mcproxy remove` on a running
// mcproxy's config change what tool search finds, without a restart; the
// servers command shows the live state.
func TestAddRemoveWhileServing(t *testing.T) {
	s := startServe(t, map[string]any{"noa": map[string]any{"enabled": false}, "mcpServers": map[string]any{}})
	search := func() string {
		resp, err := http.Get(s.base + "/status/search?q=" + url.QueryEscape("search nodes in the knowledge graph"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	dump := func() string { return search() + "\n" + s.stderr.String() }
	memory := testenv.NodeBin(t, "mcp-server-memory")
	if code, out, errOut := runCLI(t, "add", "--config", s.config, "--env", "MEMORY_FILE_PATH="+t.TempDir()+"/m.jsonl", "memory", "--", memory); code != exitOK {
		t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
	}
	eventually(t, "memory's tools searchable after add", 60*time.Second, func() bool { return strings.Contains(search(), `"memory:search_nodes"`) }, dump)
	code, out, _ := runCLI(t, "servers", "--config", s.config)
	if code != exitOK || !strings.Contains(out, "memory") || !strings.Contains(out, "ready") {
		t.Errorf("servers: exit %d\n%s", code, out)
	}
	if code, out, errOut := runCLI(t, "remove", "--config", s.config, "memory"); code != exitOK {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errOut)
	}
	eventually(t, "memory's tools gone after remove", 30*time.Second, func() bool { return !strings.Contains(search(), `"memory:search_nodes"`) }, dump)
}

// Without a running mcproxy, servers lists the config's servers.
func TestServersNotRunning(t *testing.T) {
	dir := t.TempDir()
	cfgPath := dir + "/config.json"
	writeJSON(t, cfgPath, map[string]any{"listen": "127.0.0.1:1", "mcpServers": map[string]any{
		"a": map[string]any{"command": "x"}, "b": map[string]any{"command": "y", "disabled": true}}})
	code, out, errOut := runCLI(t, "servers", "--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "not running") || !regexp.MustCompile(`a\s+configured`).MatchString(out) || !regexp.MustCompile(`b\s+disabled`).MatchString(out) {
		t.Errorf("servers: exit %d\n%s%s", code, out, errOut)
	}
}
