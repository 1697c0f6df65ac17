package mcptransport

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv/rpctest"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batcher","version":"0"}}}`

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

// postMCP is rpctest's, by its old name.
var postMCP = rpctest.PostMCP

// A panic outside mcp-go's own recovery, in the goroutine the front starts
// for one element of an HTTP batch (where net/http does not recover), is
// logged and answered as an Internal error for that element; the process
// and the rest of the batch go on.
func TestBatchHTTPRecoversElementPanic(t *testing.T) {
	t.Parallel()
	f, err := New(Deps{MCP: mcpserver.NewMCPServer("test", "1.0.0", mcpserver.WithToolCapabilities(true))}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	inner, closeSessions := f.Handler(HTTPOptions{})
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
