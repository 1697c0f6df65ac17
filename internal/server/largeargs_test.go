package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/largeargs"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// TestLargeArgumentsReachTheUpstream: a call whose arguments are lifted out
// of the body (largeargs.go) reaches the upstream with every byte, through
// call_tool and through a direct-mode tool, over streamable HTTP.
func TestLargeArgumentsReachTheUpstream(t *testing.T) {
	msg := strings.Repeat("a \"quoted\" line with \\ and é, </tag> & more\n", 4*largeargs.Min/40)
	for _, tc := range []struct {
		name, tool string
		mode       string
		args       map[string]any
	}{
		{"call_tool", ToolCall, "", map[string]any{"name": "test:echo", "arguments": map[string]any{"message": msg}}},
		{"direct", "test__echo", config.ModeDirect, map[string]any{"message": msg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
			f := startFront(t, up, newWordIndex(), Options{Mode: tc.mode}, mcptransport.HTTPOptions{})
			c := connect(t, f, "streamable", nil)
			res := callTool(t, c, tc.tool, tc.args)
			if got := text(res); res.IsError || got != "Echo: "+msg {
				t.Errorf("got %.80q (isError %v, %d bytes), want the %d-byte message echoed", got, res.IsError, len(got), len(msg))
			}
		})
	}
}

// TestLargeArgumentRecordedWhileCallRuns: a call with a large argument
// runs while the argument is recorded (noaFront.call's overlap), yet the
// session holds the call, cut, before its result, and a panic in the call
// still reaches the caller.
func TestLargeArgumentRecordedWhileCallRuns(t *testing.T) {
	h := openTestHost(t, hostOptions(t), "s")
	nf := &noaFront{log: zap.NewNop()}
	args, _ := json.Marshal(map[string]any{"path": "/a", "content": strings.Repeat("a line of a large file written at once\n", overlapArgs/30)})
	got, err := nf.call(context.Background(), h, "fs:write_file", string(args), true, func(context.Context) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Successfully wrote to /a"), nil
	})
	if err != nil || len(got.Content) == 0 || got.Content[0].(mcp.TextContent).Text != "Successfully wrote to /a" {
		t.Fatalf("got %v, %v; want the call's result", got, err)
	}
	msgs := h.Messages()
	if len(msgs) != 2 || msgs[0].ContentType != noa.CTToolCall || msgs[1].ContentType != noa.CTToolResult || msgs[1].ToolCallID != msgs[0].ToolCallID {
		t.Fatalf("got messages %+v, want the call and then its result", msgs)
	}
	if !strings.Contains(msgs[0].Text, noa.TruncationMarker) {
		t.Errorf("the recorded call holds %d bytes without a cut, want it cut", len(msgs[0].Text))
	}

	defer func() {
		if p := recover(); p != "upstream exploded" {
			t.Errorf("recovered %v, want the call's panic", p)
		}
	}()
	_, _ = nf.call(context.Background(), h, "fs:write_file", string(args), true, func(context.Context) (*mcp.CallToolResult, error) {
		panic("upstream exploded")
	})
	t.Error("the call's panic did not reach the caller")
}

// TestStdioLiftsLargeArguments: over stdio, a tools/call with large
// arguments is lifted out of its line before mcp-go reads it and put back
// before the call runs (largeargs.go): the upstream gets every byte, under
// an id written either way (7.0 is 7), and a lifted request mcp-go answers
// without running it leaves nothing behind.
func TestStdioLiftsLargeArguments(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	msg := strings.Repeat("a \"quoted\" line with \\ and é, </tag> & more\n", 4*largeargs.Min/40)
	enc, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	call := func(jsonrpc, id string) string {
		c.send(`{"jsonrpc":"` + jsonrpc + `","id":` + id + `,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":` + string(enc) + `}}}}`)
		return c.next()
	}
	var resp struct {
		ID     json.RawMessage          `json:"id"`
		Result mcp.CallToolResult       `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if err := json.Unmarshal([]byte(call("2.0", "7.0")), &resp); err != nil {
		t.Fatal(err)
	}
	if got := text(&resp.Result); resp.Error != nil || resp.Result.IsError || got != "Echo: "+msg {
		t.Errorf("the large call: got %.80q (%d bytes, error %v), want the %d-byte message echoed", got, len(got), resp.Error, len(msg))
	}
	if n := s.lifts.Restored(); n != 1 {
		t.Errorf("%d calls got lifted arguments back, want 1: the large call's line went to mcp-go whole", n)
	}
	// mcp-go refuses a request of another JSON-RPC version before any
	// hook runs; its lifted arguments go with the answer.
	resp.Error = nil
	if err := json.Unmarshal([]byte(call("1.0", `"old"`)), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || string(resp.ID) != `"old"` {
		t.Errorf("the JSON-RPC 1.0 call: got id %s error %v, want it refused", resp.ID, resp.Error)
	}
	if !s.lifts.Empty() {
		t.Error("the refused call's lifted arguments are still kept after its answer")
	}
	c.close()
}
