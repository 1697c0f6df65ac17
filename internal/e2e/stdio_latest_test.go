package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The 2026-07-28 protocol has no sessions, but a stdio connection is one
// client by construction: noa must still follow it, tagging every result.
// (Stateless HTTP clients are the case noa cannot follow; see docs/sessions.md.)
func TestNoaFollowsStdioClientOnNewestProtocol(t *testing.T) {
	fx := newFixture(t)
	c := startStdio(t, "serve", "--stdio", "--config", fx.config)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "mcproxy-e2e", Version: "0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcp.LATEST_PROTOCOL_VERSION {
		t.Fatalf("negotiated %s, want %s: this test no longer covers the newest protocol", res.ProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
	}
	var refs []string
	for range 2 {
		r := callTool(t, c, "call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "hi"}})
		if got := upstreamText(r); got != "Echo: hi" {
			t.Errorf("call_tool: got %q, want the upstream's echo", got)
		}
		refs = append(refs, refOf(r))
	}
	if refs[0] == "" || refs[1] == "" || refs[0] == refs[1] {
		t.Errorf("refs %q: want two distinct noa refs, one per result", refs)
	}
}
