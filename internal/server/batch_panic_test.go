package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// explodingUpstreams panics in Call when the arguments hold "message":
// "panic": a bug in the handler behind call_tool.
type explodingUpstreams struct{ Upstreams }

func (u explodingUpstreams) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if args["message"] == "panic" {
		panic("call_tool handler bug")
	}
	return u.Upstreams.Call(ctx, server, tool, args)
}

// callEcho is a call_tool request for test:echo with message, as a batch
// element with id.
func callEcho(id int, message string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": ToolCall, "arguments": map[string]any{"name": "test:echo", "arguments": map[string]any{"message": message}},
	}})
	return string(b)
}

// checkPanicBatch checks the answer to [ping 2, call_tool panicking 3,
// call_tool 4]: the panicking element is an Internal error, the others are
// answered.
func checkPanicBatch(t *testing.T, body string) {
	t.Helper()
	got, nulls := byID(t, body)
	if len(got) != 3 || len(nulls) != 0 {
		t.Fatalf("batch answer %s: got %d responses, want 3", body, len(got))
	}
	if r := got["3"]; r.Error == nil || r.Error.Code != mcp.INTERNAL_ERROR {
		t.Errorf("the panicking call: got %+v, want an Internal error (%d)", r, mcp.INTERNAL_ERROR)
	}
	if r := got["2"]; r.Error != nil || string(r.Result) != "{}" {
		t.Errorf("ping beside the panic: got %+v", r)
	}
	if r := got["4"]; r.Error != nil || !strings.Contains(string(r.Result), "Echo: still here") {
		t.Errorf("call beside the panic: got %+v", r)
	}
}

const panicBatch = `[{"jsonrpc":"2.0","id":2,"method":"ping"},` // + callEcho(3, "panic"), callEcho(4, "still here")]

// A handler that panics inside a batch over streamable HTTP yields an error
// element, the rest of the batch is answered, and the front keeps serving.
func TestBatchPanicStreamableHTTP(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, explodingUpstreams{up}, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	var session string
	post := func(body string) (int, string) {
		t.Helper()
		code, body, h := postMCP(t, f.base+mcptransport.PathStreamable, session, body)
		if session == "" {
			session = h.Get("Mcp-Session-Id")
		}
		return code, body
	}
	if code, body := post(initBody); code != http.StatusOK {
		t.Fatalf("initialize: got %d %q", code, body)
	}
	for range 2 { // the second round shows the front is still serving
		code, body := post(panicBatch + callEcho(3, "panic") + "," + callEcho(4, "still here") + "]")
		if code != http.StatusOK {
			t.Fatalf("batch: got %d %q", code, body)
		}
		checkPanicBatch(t, body)
	}
}

// A handler that panics inside a batch over stdio yields an error element,
// and the front keeps serving the connection.
func TestBatchPanicStdio(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: explodingUpstreams{up}, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	c.send(initBody)
	if got := c.next(); !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("initialize: got %s", got)
	}
	for range 2 {
		c.send(panicBatch + callEcho(3, "panic") + "," + callEcho(4, "still here") + "]")
		checkPanicBatch(t, c.next())
	}
	c.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if got := c.next(); got != `{"jsonrpc":"2.0","id":7,"result":{}}` {
		t.Errorf("ping after the batches: got %s", got)
	}
}
