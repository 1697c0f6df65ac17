package e2e

import (
	"context"
	"path/filepath"
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
