package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/profile"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// A ToolFilter (a profile's matcher) hides tools from the list and makes
// them uncallable as "no tool", with no hint that they exist.
func TestToolFilterHides(t *testing.T) {
	m := profile.New("p", config.ProfileConfig{Tools: []string{"everything:echo"}})
	mgr := startManager(t, map[string]config.ServerConfig{"everything": {Command: testenv.NodeBin(t, "mcp-server-everything")}}, Options{
		ToolFilter: func(server string, tl mcp.Tool) bool { return m.Tool(server, tl.Name, tl.Annotations) },
	})
	if st := statusOf(t, mgr, "everything"); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	if got := toolNames(mgr.Tools()); len(got) != 1 || got[0] != "everything:echo" {
		t.Fatalf("tools %v, want only everything:echo", got)
	}
	if got := text(call(t, mgr, "everything", "echo", map[string]any{"message": "hi"})); got != "Echo: hi" {
		t.Errorf("echo: %q", got)
	}
	_, err := mgr.Call(context.Background(), "everything", "get-sum", map[string]any{"a": 1, "b": 2})
	if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), `upstream "everything" has no tool "get-sum"`) ||
		strings.Contains(err.Error(), "hidden") || strings.Contains(err.Error(), "profile") {
		t.Errorf("a call outside the filter: %v; want a plain unknown tool", err)
	}
}

// mcpServers.<name>.rate_limit holds on the calls sent to that server.
func TestUpstreamRateLimit(t *testing.T) {
	sc := config.ServerConfig{Command: testenv.NodeBin(t, "mcp-server-everything"), RateLimit: config.RateLimitConfig{CallsPerSecond: 0.5, Burst: 2}}
	mgr := startManager(t, map[string]config.ServerConfig{"everything": sc}, Options{Limits: ratelimit.New()})
	statusOf(t, mgr, "everything")
	for i := range 2 {
		if _, err := mgr.Call(context.Background(), "everything", "echo", map[string]any{"message": "x"}); err != nil {
			t.Fatalf("call %d within the burst: %v", i, err)
		}
	}
	_, err := mgr.Call(context.Background(), "everything", "echo", map[string]any{"message": "x"})
	var re *ratelimit.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "upstream everything is over its rate limit") ||
		!strings.Contains(err.Error(), "mcpServers.everything.rate_limit.calls_per_second") || !strings.Contains(err.Error(), "retry in") {
		t.Errorf("the third call: %v", err)
	}
}
