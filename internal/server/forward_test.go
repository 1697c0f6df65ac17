package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// forwardUpstream is a 2026-07-28-only upstream whose tools ask the way
// the conformance suite's do: over two rounds with a new requestState
// each, three questions in one round, and one that reports the sampling
// capability the request declared.
func forwardUpstream(t *testing.T) config.ServerConfig {
	t.Helper()
	srv := mcpserver.NewMCPServer("forward-upstream", "1", mcpserver.WithToolCapabilities(true))
	form := func(msg string) mcp.ElicitationParams {
		return mcp.ElicitationParams{Message: msg, RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}}}}
	}
	name := func(r *mcp.ElicitationResult) any { return r.Content.(map[string]any)["name"] }
	srv.AddTool(mcp.NewTool("rounds"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := req.Params
		switch {
		case p.RequestState == "round-2" && mcpserver.ElicitationResponse(p.InputResponses, "second") != nil:
			return mcp.NewToolResultText(fmt.Sprintf("second=%v", name(mcpserver.ElicitationResponse(p.InputResponses, "second")))), nil
		case p.RequestState == "round-1" && mcpserver.ElicitationResponse(p.InputResponses, "first") != nil:
			return mcpserver.NewInputRequestBuilder("round-2").Elicit("second", form("again?")).ToolResult(), nil
		}
		return mcpserver.NewInputRequestBuilder("round-1").Elicit("first", form("name?")).ToolResult(), nil
	})
	srv.AddTool(mcp.NewTool("many"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var got []string
		for _, k := range []string{"x", "y", "z"} {
			if r := mcpserver.ElicitationResponse(req.Params.InputResponses, k); r != nil {
				got = append(got, fmt.Sprintf("%s=%v", k, name(r)))
			}
		}
		if len(got) == 3 {
			return mcp.NewToolResultText(strings.Join(got, " ")), nil
		}
		return mcpserver.NewInputRequestBuilder("many").Elicit("x", form("x?")).Elicit("y", form("y?")).Elicit("z", form("z?")).ToolResult(), nil
	})
	srv.AddTool(mcp.NewTool("caps"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		info := mcpserver.RequestProtocolInfoFromContext(ctx)
		return mcp.NewToolResultText(fmt.Sprintf("sampling=%v", info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Sampling != nil)), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv, mcpserver.WithStreamableHTTPProtocolVersions(mcp.LATEST_PROTOCOL_VERSION)))
	t.Cleanup(ts.Close)
	return config.ServerConfig{URL: ts.URL + "/mcp"}
}

// TestRelayForwardsStatelessCalls: a 2026-07-28 client's call to a
// 2026-07-28 upstream goes upstream as the client sent it, and the
// upstream's input requests come back as it sent them (issue 29): a new
// requestState each round, three questions in one round under their own
// keys, and the client's own capabilities declared upstream. Through the
// relay's parking, the rounds carried mcproxy's one requestState, the
// questions came one per round under "mcproxy", and the upstream saw
// mcproxy's sampling capability.
func TestRelayForwardsStatelessCalls(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{config.ModeDirect, config.ModeRetrieve} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testForwardsStatelessCalls(t, mode)
		})
	}
}

// testForwardsStatelessCalls runs TestRelayForwardsStatelessCalls in mode
// (retrieve: every call through call_tool, whose own inputResponses and
// requestState reach the upstream call).
func testForwardsStatelessCalls(t *testing.T, mode string) {
	f := startRelayFrontMode(t, map[string]config.ServerConfig{"up": forwardUpstream(t)}, mode)
	call := func(c *frontClient, tool string) string {
		t.Helper()
		if mode == config.ModeRetrieve {
			return c.callArgs(t, ToolCall, map[string]any{"name": "up:" + tool, "arguments": map[string]any{}}, nil)
		}
		return c.call(t, "up__"+tool, nil)
	}
	c := dialFront(t, f.url, "", answeringClient())

	if got, want := call(c, "rounds"), "second=Ada"; got != want {
		t.Errorf("rounds: got %q, want %q", got, want)
	}
	sent := f.sent()
	for _, state := range []string{`"requestState":"round-1"`, `"requestState":"round-2"`} {
		if !strings.Contains(sent, state) {
			t.Errorf("rounds: the client was not sent the upstream's %s", state)
		}
	}

	if got, want := call(c, "many"), "x=Ada y=Ada z=Ada"; got != want {
		t.Errorf("many: got %q, want %q", got, want)
	}
	sent = strings.TrimPrefix(f.sent(), sent)
	if n := strings.Count(sent, `"resultType":"input_required"`); n != 1 {
		t.Errorf("many: the client was sent %d input_required results, want 1 with all three questions", n)
	}
	if !strings.Contains(sent, `"inputRequests":{"x":{"method":"elicitation/create"`) || !strings.Contains(sent, `},"y":{"method":"elicitation/create"`) || !strings.Contains(sent, `},"z":{"method":"elicitation/create"`) {
		t.Errorf("many: the questions did not reach the client under the upstream's keys x, y, z:\n%s", sent)
	}

	if got, want := call(c, "caps"), "sampling=true"; got != want {
		t.Errorf("caps, a client that declares sampling: got %q, want %q", got, want)
	}
	bare := dialFront(t, f.url, "", &frontClient{})
	if got, want := call(bare, "caps"), "sampling=false"; got != want {
		t.Errorf("caps, a client that declares no sampling: got %q, want %q (the client's capabilities, not mcproxy's)", got, want)
	}
}
