package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
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
	f := startFront(t, explodingUpstreams{up}, newWordIndex(), Options{}, HTTPOptions{})
	var session string
	post := func(body string) (int, string) {
		t.Helper()
		code, body, h := postMCP(t, f.base+PathStreamable, session, body)
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

// panicsOn is an http.Handler that panics on any message naming method and
// passes the others to next: a panic that no layer of mcp-go recovers.
func panicsOn(method string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if bytes.Contains(body, []byte(`"method":"`+method+`"`)) {
			panic("handler bug on " + method)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// A panic outside mcp-go's own recovery, in the goroutine the front starts
// for one element of an HTTP batch (where net/http does not recover), is
// logged and answered as an Internal error for that element; the process
// and the rest of the batch go on.
func TestBatchHTTPRecoversElementPanic(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Resync()
	inner, closeSessions := s.Handler(HTTPOptions{})
	t.Cleanup(func() { closeSessions(context.Background()) })
	core, logs := observer.New(zap.ErrorLevel)
	srv := httptest.NewServer(batchHTTP(panicsOn("tools/list", inner), true, zap.New(core)))
	t.Cleanup(srv.Close)

	code, body, h := postMCP(t, srv.URL+PathStreamable, "", initBody)
	session := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: got %d %q", code, body)
	}
	for round := range 2 {
		code, body, _ = postMCP(t, srv.URL+PathStreamable, session, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":"l","method":"tools/list"},{"jsonrpc":"2.0","method":"tools/list"}]`)
		if code != http.StatusOK {
			t.Fatalf("round %d: batch: got %d %q", round, code, body)
		}
		got, nulls := byID(t, body)
		if len(got) != 2 || len(nulls) != 0 {
			t.Fatalf("round %d: batch answer %s: want the ping and one error (the notification gets none)", round, body)
		}
		if r := got[`"l"`]; r.Error == nil || r.Error.Code != mcp.INTERNAL_ERROR || !strings.Contains(r.Error.Message, "tools/list") {
			t.Errorf("round %d: panicking element: got %+v, want an Internal error naming the method", round, r)
		}
		if r := got["2"]; r.Error != nil {
			t.Errorf("round %d: ping: got %+v", round, r)
		}
	}
	if n := logs.FilterMessageSnippet("panic while handling a message of a JSON-RPC batch").Len(); n != 4 {
		t.Errorf("got %d panic log entries, want 4 (two per round)", n)
	}
	if code, body, _ := postMCP(t, srv.URL+PathStreamable, session, `{"jsonrpc":"2.0","id":10,"method":"ping"}`); code != http.StatusOK || !strings.Contains(body, `"id":10`) {
		t.Errorf("single ping after the panics: got %d %q", code, body)
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

// failLocked, the recovery of a panic while a batch is being split, forgets
// what the batch registered and answers each of its requests.
func TestStdioBatchesFailLocked(t *testing.T) {
	var out bytes.Buffer
	core, _ := observer.New(zap.ErrorLevel)
	s := newStdioBatches(&out, zap.New(core))
	elems, bad := parseBatch([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`))
	if bad != nil {
		t.Fatal(string(bad))
	}
	if _, err := s.register(elems); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	var b *stdioBatch
	for _, owner := range s.pending {
		b = owner
	}
	err := s.failLocked(b, elems)
	left := len(s.pending)
	s.mu.Unlock()
	if err != nil || left != 0 {
		t.Fatalf("failLocked: error %v, %d requests still owed; want none", err, left)
	}
	got, _ := byID(t, out.String())
	if len(got) != 2 || got["1"].Error == nil || got[`"b"`].Error == nil || got["1"].Error.Code != mcp.INTERNAL_ERROR {
		t.Errorf("got %s, want an Internal error for each request", out.String())
	}
}
