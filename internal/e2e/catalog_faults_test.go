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
	// The standalone GET stream stays open, as the TypeScript SDK keeps it:
	// without it mcp-go's server delivers a notification only inside a POST
	// in flight, and the updates below come between calls.
	c := startHTTP(t, base+"/mcp", transport.WithContinuousListening())
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
	// A subscription to a URI no server offers is refused, saying why.
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(77)),
		Method: string(mcp.MethodResourcesSubscribe), Params: map[string]any{"uri": "nope://x"},
	})
	if err != nil || resp.Error == nil || !strings.Contains(resp.Error.Message, `no server offers resource "nope://x"`) {
		t.Errorf("resources/subscribe nope://x: got %v / %+v, want an error saying no server offers it", err, resp)
	}
	// One that a server offers is accepted.
	resp, err = c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(78)),
		Method: string(mcp.MethodResourcesSubscribe), Params: map[string]any{"uri": "test://watched-resource"},
	})
	if err != nil || resp.Error != nil {
		t.Errorf("resources/subscribe test://watched-resource: got %v / %+v, want success", err, resp)
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

// TestPromptsListChangedRelayed has the Go SDK's conformance server add a
// prompt while a client is connected (its test_trigger_prompt_change tool):
// mcproxy re-lists the server's prompts, sends the client
// notifications/prompts/list_changed, and lists the new prompt under the
// server's prefix.
func TestPromptsListChangedRelayed(t *testing.T) {
	ref := referenceServer(t)
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"conf": map[string]any{"command": ref, "prefix": "c_"}},
		"data_dir":   filepath.Join(dir, "data"),
		"mode":       "direct",
	})
	base, _ := serveHTTP(t, config)
	// The standalone GET stream carries notifications sent outside a call.
	c := startHTTP(t, base+"/mcp", transport.WithContinuousListening())
	changed := make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationPromptsListChanged) {
			changed <- struct{}{}
		}
	})
	initialize(t, c)
	// In direct mode tools/list waits for the upstreams' first connection.
	if tools := listTools(t, c); !slices.Contains(tools, "c_test_trigger_prompt_change") {
		t.Fatalf("tools/list: got %v, want c_test_trigger_prompt_change", tools)
	}
	res := callTool(t, c, "c_test_trigger_prompt_change", nil)
	if res.IsError {
		t.Fatalf("c_test_trigger_prompt_change: %s", text(res))
	}
	const want = "c___transient_prompt_for_list_changed"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/prompts/list_changed listing %s within 20s", want)
		}
		got, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(got.Prompts, func(p mcp.Prompt) bool { return p.Name == want }) {
			return
		}
	}
}

// TestListCommand runs `mcproxy list` against the Go SDK's conformance
// server: it prints the tools, prompts and resources under the names a
// client sees (the prefix applied to tools in direct mode and to prompts,
// URIs as sent) and exits 0.
func TestListCommand(t *testing.T) {
	ref := referenceServer(t)
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"conf": map[string]any{"command": ref, "prefix": "c_"}},
		"data_dir":   filepath.Join(dir, "data"),
	})
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"list", "--config", config, "--mode", "direct"},
			[]string{"tools: 28", "c_test_simple_text", "prompts: 5", "c_test_simple_prompt", "resources: 4", "test://static-text", "test://template/{id}/data  (template)"}, nil},
		{[]string{"list", "tools", "--config", config},
			[]string{"conf:test_simple_text", "ids for call_tool"}, []string{"prompts:"}},
		{[]string{"list", "prompts", "--config", config},
			[]string{"prompts: 5", "  conf\n", "c_test_prompt_with_arguments"}, []string{"tools"}},
	} {
		code, stdout, stderr := runBinary(t, time.Minute, tc.args...)
		if code != 0 {
			t.Fatalf("mcproxy %v: exit %d, want 0\n%s%s", tc.args, code, stdout, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("mcproxy %v: output lacks %q:\n%s", tc.args, w, stdout)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(stdout, n) {
				t.Errorf("mcproxy %v: output has %q, want only what was asked:\n%s", tc.args, n, stdout)
			}
		}
	}
	if code, _, stderr := runBinary(t, time.Minute, "list", "widgets", "--config", config); code != 2 || !strings.Contains(stderr, "want tools, prompts or resources") {
		t.Errorf("mcproxy list widgets: exit %d, stderr %q; want 2 and the kinds it takes", code, stderr)
	}
}
