package mcptransport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv/rpctest"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// byID is rpctest's, by its old name.
var byID = rpctest.ByID

// Answers a handler gives outside JSON-RPC (a plain-text HTTP error, an
// error without an id) still reach each request as a response with its id;
// mcp-go gives none of these for a well-formed message, so a stand-in
// handler gives them here.
func TestBatchForwardAnswers(t *testing.T) {
	t.Parallel()
	stub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e batchElement
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			t.Errorf("stub: %v", err)
		}
		switch string(e.ID) {
		case "1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		case "2":
			http.Error(w, "bad thing", http.StatusBadRequest)
		case "3":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no id seen"}}`)
		default: // 4 and the notification: accepted, no body
			w.WriteHeader(http.StatusAccepted)
		}
	})
	post := func(h http.Handler, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathStreamable, strings.NewReader(body)))
		return rec
	}
	rec := post(batchHTTP(stub, true, zap.NewNop()), `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	got, nulls := byID(t, rec.Body.String())
	if rec.Code != http.StatusOK || len(got) != 4 || len(nulls) != 0 {
		t.Fatalf("got %d %s, want 200 and one response for each of the four requests", rec.Code, rec.Body)
	}
	for id, want := range map[string]string{"2": "bad thing", "3": "no id seen", "4": "no response"} {
		if r := got[id]; r.Error == nil || !strings.Contains(r.Error.Message, want) {
			t.Errorf("response %s: got %+v, want an error saying %q", id, r, want)
		}
	}
	// Over legacy SSE answers travel on the stream: a 202 is no failure.
	if rec := post(batchHTTP(stub, false, zap.NewNop()), `[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`); rec.Code != http.StatusAccepted {
		t.Errorf("/message batch answered on the stream: got %d %s, want 202", rec.Code, rec.Body)
	}
}

// Output that arrives in pieces is handled line by line, whether or not a
// batch is waiting for responses.
func TestStdioBatchesWritePieces(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	s := newStdioBatches(&out, zap.NewNop())
	write := func(p string) {
		t.Helper()
		if n, err := s.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q): %d, %v", p, n, err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"res`)
	write("ult\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n{\"jsonrpc\"")
	if got, want := out.String(), `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/x"}`+"\n"; got != want {
		t.Fatalf("nothing pending: got %q, want %q", got, want)
	}
	out.Reset()
	var in strings.Builder
	if err := s.splitBatch([]byte(`[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":8,"method":"ping"}]`), &in); err != nil {
		t.Fatal(err)
	}
	if got := in.String(); got != `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n" {
		t.Errorf("split batch: got %q", got)
	}
	write(`:"2.0","id":2,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":8,"res`)
	write(`ult":{}}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")
	want := `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `[{"jsonrpc":"2.0","id":8,"result":{}},{"jsonrpc":"2.0","id":7,"result":{}}]` + "\n"
	if got := out.String(); got != want {
		t.Errorf("with a batch pending: got %q, want %q", got, want)
	}
}

// failLocked, the recovery of a panic while a batch is being split, forgets
// what the batch registered and answers each of its requests.
func TestStdioBatchesFailLocked(t *testing.T) {
	t.Parallel()
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
