package mcptransport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// notifyingFront serves a front whose tool "count" sends n progress
// notifications through Notify (and, with mixed, one through mcp-go's
// session queue between them) before answering. It records what each
// Notify returned and keeps the last call's context.
type notifyingFront struct {
	url string
	mu  sync.Mutex
	ok  []bool
	ctx context.Context
}

func newNotifyingFront(t *testing.T, n int, mixed bool) *notifyingFront {
	t.Helper()
	nf := &notifyingFront{}
	s := mcpserver.NewMCPServer("test", "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("count"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := 1; i <= n; i++ {
			if mixed && i == n/2 {
				_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "through the session"})
			}
			params := map[string]any{"progressToken": token, "progress": i, "total": n}
			ok := Notify(ctx, string(mcp.MethodNotificationProgress), params)
			if !ok {
				// What the relay does then: mcp-go's session queue.
				_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params)
			}
			nf.mu.Lock()
			nf.ok = append(nf.ok, ok)
			nf.mu.Unlock()
		}
		nf.mu.Lock()
		nf.ctx = ctx
		nf.mu.Unlock()
		return mcp.NewToolResultText("counted"), nil
	})
	f, err := New(Deps{MCP: s}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, closeSessions := f.Handler(HTTPOptions{})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { closeSessions(context.Background()); srv.Close() })
	nf.url = srv.URL + PathStreamable
	return nf
}

// session initializes one and opens its standalone GET stream, the reader
// that used to take a share of every call's notifications; it returns the
// session id and what the GET stream received, read once the test ends.
func (nf *notifyingFront) session(t *testing.T) (string, func() string) {
	t.Helper()
	code, body, h := postMCP(t, nf.url, "", initBody)
	id := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q", code, body)
	}
	if code, body, _ := postMCP(t, nf.url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nf.url, http.NoBody)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET stream: %s", resp.Status)
	}
	var got strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&got, resp.Body)
	}()
	return id, func() string {
		cancel()
		<-done
		resp.Body.Close()
		return got.String()
	}
}

// events splits an SSE body into the JSON data of its events.
func events(t *testing.T, body string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q is not JSON: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

const countCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","_meta":{"progressToken":"p"}}}`

// A call's notifications sent through Notify all travel on the call's own
// POST stream, in the order sent and before its answer, even with the
// session's GET stream open (mcp-go would hand some of them to it).
func TestNotifyKeepsACallsNotificationsOnItsStream(t *testing.T) {
	t.Parallel()
	const n = 40
	nf := newNotifyingFront(t, n, false)
	id, getStream := nf.session(t)
	code, body, h := postMCP(t, nf.url, id, countCall)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("call: %d %s %q, want an SSE stream", code, h.Get("Content-Type"), body)
	}
	evs := events(t, body)
	if len(evs) != n+1 {
		t.Fatalf("got %d events, want %d progress notifications and the answer:\n%s", len(evs), n, body)
	}
	for i, ev := range evs[:n] {
		params, _ := ev["params"].(map[string]any)
		if ev["method"] != "notifications/progress" || params["progress"] != float64(i+1) || params["progressToken"] != "p" {
			t.Fatalf("event %d: got %v, want progress %d of token p", i, ev, i+1)
		}
	}
	if last := evs[n]; last["id"] != float64(7) || last["result"] == nil {
		t.Errorf("last event: got %v, want the call's answer", last)
	}
	if got := getStream(); strings.Contains(got, "notifications/progress") {
		t.Errorf("the GET stream got progress notifications: %q", got)
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	for i, ok := range nf.ok {
		if !ok {
			t.Errorf("Notify %d returned false", i)
		}
	}
	// After the answer, nothing more goes on that stream: the caller falls
	// back to the session.
	if Notify(nf.ctx, "notifications/progress", map[string]any{"progressToken": "p", "progress": n + 1}) {
		t.Error("Notify after the answer returned true")
	}
}

// When mcp-go itself streams the answer (a notification of its own queue
// reached this POST's forwarder), Notify's events and mcp-go's share the
// stream whole, and the answer is still the last event.
func TestNotifySharesAStreamMCPGoUpgraded(t *testing.T) {
	t.Parallel()
	const n = 10
	nf := newNotifyingFront(t, n, true)
	id, getStream := nf.session(t)
	defer getStream()
	code, body, _ := postMCP(t, nf.url, id, countCall)
	if code != http.StatusOK {
		t.Fatalf("call: %d %q", code, body)
	}
	evs := events(t, body)
	var progress []float64
	for _, ev := range evs {
		if ev["method"] == "notifications/progress" {
			progress = append(progress, ev["params"].(map[string]any)["progress"].(float64))
		}
	}
	if want := fmt.Sprint(seq(n)); fmt.Sprint(progress) != want {
		t.Errorf("progress on the call's stream: %v, want %s", progress, want)
	}
	if last := evs[len(evs)-1]; last["id"] != float64(7) {
		t.Errorf("last event %v, want the answer", last)
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

// A message of a batch has no stream of its own (its answer is recorded
// into the batch's): Notify declines and the caller uses the session.
func TestNotifyDeclinesBatchElements(t *testing.T) {
	t.Parallel()
	nf := newNotifyingFront(t, 3, false)
	id, getStream := nf.session(t)
	defer getStream()
	code, body, _ := postMCP(t, nf.url, id, "["+countCall+"]")
	if code != http.StatusOK || !strings.Contains(body, "counted") {
		t.Fatalf("batch: %d %q", code, body)
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	for i, ok := range nf.ok {
		if ok {
			t.Errorf("Notify %d in a batch element returned true", i)
		}
	}
}

func TestIsAnswerEvent(t *testing.T) {
	t.Parallel()
	for ev, want := range map[string]bool{
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":7,"result":{}}` + "\n\n":                        true,
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":"a,b","error":{"code":1}}` + "\n\n":             true,
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","id":3,"params":{},"method":"sampling"}` + "\n\n":    false,
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"notifications/progress"}` + "\n\n":         false,
		`{"jsonrpc":"2.0","id":7,"result":{}}`:                                                                 false,
		`event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"x","params":{"id":1,"result":2}}` + "\n\n": false,
	} {
		if got := isAnswerEvent([]byte(ev)); got != want {
			t.Errorf("isAnswerEvent(%q) = %v, want %v", ev, got, want)
		}
	}
}
