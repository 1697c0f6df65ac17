package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// addBulkyTools gives the "bulky" peer a tool answering with n bytes of
// text (one stdout line of about that size) and one that first writes a
// line that is not JSON to stdout.
func addBulkyTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("bulk", mcp.WithDescription("Answer with n bytes."), mcp.WithNumber("n", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("b", int(req.GetFloat("n", 0)))), nil
		})
	s.AddTool(mcp.NewTool("babble", mcp.WithDescription("Print a banner to stdout, then answer.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stdout, "Server listening, debug mode on")
			return mcp.NewToolResultText("said it"), nil
		})
}

// An upstream message over limits.max_message_bytes fails the call with
// an error naming the key, without being read whole, and the upstream is
// restarted: the next call goes through. A line that is not JSON is
// logged, not silently dropped.
func TestUpstreamMessageLimit(t *testing.T) {
	sc, _ := peerServer(t, "bulky")
	log, logs := observed()
	m := New(&config.Config{
		MCPServers:  map[string]config.ServerConfig{"bulky": sc},
		InitTimeout: config.Duration(20 * time.Second),
		Limits:      config.LimitsConfig{MaxMessageBytes: 1 << 20},
	}, Options{Logger: log, MinBackoff: 50 * time.Millisecond})
	t.Cleanup(func() { closeAndCheck(t, m) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)

	if res := call(t, m, "bulky", "bulk", map[string]any{"n": 100_000}); len(text(res)) != 100_000 {
		t.Fatalf("100 kB answer under a 1 MB limit: got %d bytes", len(text(res)))
	}
	pid := childPID(t, m, "bulky")
	_, err := m.Call(ctx, "bulky", "bulk", map[string]any{"n": 2 << 20})
	var down *DownError
	if !errors.As(err, &down) || !strings.Contains(err.Error(), "limits.max_message_bytes") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("2 MB answer over a 1 MB limit: got %v, want a DownError naming limits.max_message_bytes", err)
	}
	waitUntil(t, 30*time.Second, "the upstream restarted", func() bool {
		st := statusOf(t, m, "bulky")
		return st.State == StateReady && childPID(t, m, "bulky") != pid
	})
	if got := text(call(t, m, "bulky", "babble", nil)); got != "said it" {
		t.Fatalf("after the restart: got %q", got)
	}
	waitUntil(t, 5*time.Second, "the non-JSON line logged", func() bool {
		for _, e := range logs.FilterMessageSnippet("not JSON-RPC").All() {
			if strings.Contains(e.ContextMap()["line"].(string), "Server listening, debug mode on") {
				return true
			}
		}
		return false
	})
}

// An HTTP upstream's answer over limits.max_message_bytes fails the call
// with an error naming the key; the server stays connected and the next
// call of ordinary size goes through.
func TestHTTPUpstreamMessageLimit(t *testing.T) {
	url := startHTTPEverything(t, "streamableHttp") + "/mcp"
	m := New(&config.Config{
		MCPServers:  map[string]config.ServerConfig{"web": {URL: url}},
		InitTimeout: config.Duration(60 * time.Second),
		Limits:      config.LimitsConfig{MaxMessageBytes: 256 << 10},
	}, Options{Logger: zap.NewNop()})
	t.Cleanup(func() { closeAndCheck(t, m) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)
	if got := text(call(t, m, "web", "echo", map[string]any{"message": "small"})); !strings.Contains(got, "small") {
		t.Fatalf("small echo: %q", got)
	}
	_, err := m.Call(ctx, "web", "echo", map[string]any{"message": strings.Repeat("z", 512<<10)})
	if err == nil || !strings.Contains(err.Error(), "limits.max_message_bytes") {
		t.Fatalf("a 512 kB answer over a 256 kB limit: got %v, want an error naming limits.max_message_bytes", err)
	}
	if got := text(call(t, m, "web", "echo", map[string]any{"message": "again"})); !strings.Contains(got, "again") {
		t.Fatalf("echo after the refused answer: %q", got)
	}
}
