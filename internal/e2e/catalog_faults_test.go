package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestSubscriptionRenewedAfterUpstreamRestart kills the stdio server that
// owns a client's resource subscription: mcproxy reconnects to a new
// process, which knows nothing of the subscription, renews it there, and the
// client gets the new process's updates without subscribing again.
func TestSubscriptionRenewedAfterUpstreamRestart(t *testing.T) {
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
		"log_level":    "debug",
	})
	base, p := serveHTTP(t, config)
	c := startHTTP(t, base+"/mcp")
	updates := make(chan string, 100)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			updates <- uri
		}
	})
	initialize(t, c)
	// Tool calls wait for the upstreams' first connection; after this one
	// the server is up and its resources are known.
	proxied(t, c, "everything:echo", map[string]any{"message": "up"})

	const uri = "demo://resource/static/document/architecture.md"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(9001)),
		Method: string(mcp.MethodResourcesSubscribe), Params: map[string]any{"uri": uri},
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("resources/subscribe: got %v / %+v, want success", err, resp)
	}

	pid := childPID(t, p.cmd.Process.Pid, "mcp-server-everything")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if newPID := childPIDOrZero(p.cmd.Process.Pid, "mcp-server-everything"); newPID != 0 && newPID != pid {
			res := callTool(t, c, "call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "back"}})
			if !res.IsError {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything is not back 60s after being killed:\n%s", p.output())
		}
		time.Sleep(250 * time.Millisecond)
	}
	// Updates start only now, in the new process, for the subscriptions it
	// holds: one arrives only if mcproxy renewed ours.
	// The front's tool catalog can trail the manager's "ready" by a moment
	// (a call for a tool it does not hold yet is refused before reaching
	// the upstream), so only that refusal is retried: the tool toggles.
	for i := 0; ; i++ {
		res := callTool(t, c, "call_tool", map[string]any{"name": "everything:toggle-subscriber-updates", "arguments": map[string]any{}})
		if !res.IsError {
			break
		}
		if !strings.HasPrefix(text(res), "Unknown tool") || i == 40 {
			t.Fatalf("toggle-subscriber-updates: got %q", text(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case got := <-updates:
		if got != uri {
			t.Errorf("resources/updated: got %q, want %q", got, uri)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no notifications/resources/updated within 20s of the restarted server's updates starting; want the subscription renewed on the new connection:\n%s", p.output())
	}
	if !strings.Contains(p.output(), "renewed resource subscription") {
		t.Errorf("mcproxy log: no \"renewed resource subscription\" line, want the renewal logged")
	}
}

// TestPrefixCollisionsWithheld puts two copies of the Go SDK's conformance
// server behind mcproxy, both with "prefix": "": every tool, prompt and
// resource URI of the second collides with the first's. Each name is exposed
// once, and the log names both servers for what was withheld.
func TestPrefixCollisionsWithheld(t *testing.T) {
	ref := referenceServer(t)
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"one": map[string]any{"command": ref, "prefix": ""},
			"two": map[string]any{"command": ref, "prefix": ""},
		},
		"data_dir": filepath.Join(dir, "data"),
		"mode":     "direct",
	})
	base, p := serveHTTP(t, config)
	c := startHTTP(t, base+"/mcp")
	initialize(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tools := listTools(t, c)
	if !slices.Contains(tools, "test_simple_text") {
		t.Fatalf("tools/list: got %v, want test_simple_text exposed under its own name", tools)
	}
	seen := map[string]int{}
	for _, n := range tools {
		seen[n]++
	}
	for n, k := range seen {
		if k > 1 {
			t.Errorf("tools/list: %q listed %d times, want once", n, k)
		}
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pr := range prompts.Prompts {
		names = append(names, pr.Name)
	}
	slices.Sort(names)
	if want := []string{"test_input_required_result_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"}; !slices.Equal(names, want) {
		t.Errorf("prompts/list: got %v, want each of the server's prompts once, as it names them: %v", names, want)
	}
	res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	uris := map[string]bool{}
	for _, r := range res.Resources {
		if uris[r.URI] {
			t.Errorf("resources/list: %q listed twice", r.URI)
		}
		uris[r.URI] = true
	}
	got, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "test_simple_prompt"}})
	if err != nil || len(got.Messages) == 0 {
		t.Errorf("prompts/get test_simple_prompt: got %v, %v; want the kept server's messages", got, err)
	}
	// Which server keeps the names depends on which came up first.
	log := p.output()
	later, keeper := "two", "one"
	if strings.Contains(log, `of server "one" collides`) {
		later, keeper = "one", "two"
	}
	for _, want := range []string{
		`prompt "test_simple_prompt" of server "` + later + `" collides with the one server "` + keeper + `" exposes`,
		`tool "test_simple_text" of server "` + later + `" collides with the tool server "` + keeper + `" exposes as "test_simple_text"`,
		`resource "test://static-text" of server "` + later + `" collides with the one server "` + keeper + `"`,
		"set mcpServers." + later + ".prefix",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("mcproxy log lacks %q:\n%s", want, log)
		}
	}
}
