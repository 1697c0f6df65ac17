package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv/rpctest"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batcher","version":"0"}}}`

// rpc, byID and postMCP are rpctest's, by their old names.
type rpc = rpctest.RPC

var (
	byID    = rpctest.ByID
	postMCP = rpctest.PostMCP
)

// A batch over streamable HTTP (protocol 2025-03-26) is answered with the
// array of its requests' responses, invalid elements included; a batch of
// notifications only gets 202; a batch that cannot be read gets one error.
func TestBatchStreamableHTTP(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	f.Started()
	var session string
	post := func(body string) (int, string, http.Header) {
		t.Helper()
		return postMCP(t, f.base+mcptransport.PathStreamable, session, body)
	}
	code, body, h := post(initBody)
	session = h.Get("Mcp-Session-Id")
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: got %d %q (session %q)", code, body, session)
	}
	if code, body, _ := post(` [{"jsonrpc":"2.0","method":"notifications/initialized"}]`); code != http.StatusAccepted {
		t.Errorf("batch of one notification: got %d %q, want 202", code, body)
	}

	batch := `[
		{"jsonrpc":"2.0","id":2,"method":"ping"},
		{"jsonrpc":"2.0","id":"list","method":"tools/list"},
		{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":"in a batch"}}}},
		{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"none","progress":1}},
		{"jsonrpc":"2.0","id":5,"method":"ping","params":[]},
		42
	]`
	code, body, _ = post(batch)
	if code != http.StatusOK {
		t.Fatalf("batch: got %d %q, want 200", code, body)
	}
	got, nulls := byID(t, body)
	if len(got) != 4 || len(nulls) != 1 {
		t.Errorf("batch answer %s: got %d responses and %d errors without id, want 4 and 1 (the invalid element)", body, len(got), len(nulls))
	}
	// Positional params are JSON-RPC too: the element is mcp-go's to judge,
	// and its answer carries the element's id.
	if _, ok := got["5"]; !ok {
		t.Errorf("batch answer %s: no response with id 5 (a request with array params)", body)
	}
	if r, ok := got["2"]; !ok || r.Error != nil || string(r.Result) != "{}" {
		t.Errorf("ping in the batch: got %+v", r)
	}
	if r := got[`"list"`]; r.Error != nil || !strings.Contains(string(r.Result), `"retrieve_tools"`) {
		t.Errorf("tools/list in the batch: got %s", r.Result)
	}
	if r := got["4"]; r.Error != nil || !strings.Contains(string(r.Result), "Echo: in a batch") {
		t.Errorf("call_tool in the batch: got %s", r.Result)
	}
	if len(nulls) == 1 && (nulls[0].Error == nil || nulls[0].Error.Code != -32600) {
		t.Errorf("invalid element: got %+v, want an Invalid Request error", nulls[0])
	}

	for _, tc := range []struct{ name, body string }{
		{"empty", "[]"},
		{"cut short", `[{"jsonrpc":"2.0","id":9,"method":"ping"}`},
	} {
		code, body, _ := post(tc.body)
		var r rpc
		if err := json.Unmarshal([]byte(body), &r); err != nil || code != http.StatusBadRequest || r.Error == nil || string(r.ID) != "null" {
			t.Errorf("%s batch: got %d %q, want 400 with one JSON-RPC error", tc.name, code, body)
		}
	}
	// A session the server does not know: the batch is refused as a single
	// message is (404, so the client starts a new session).
	single, singleBody, _ := postMCP(t, f.base+mcptransport.PathStreamable, "no-such-session", `{"jsonrpc":"2.0","id":20,"method":"ping"}`)
	code, body, _ = postMCP(t, f.base+mcptransport.PathStreamable, "no-such-session", `[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"2.0","id":21,"method":"ping"}]`)
	if single != http.StatusNotFound || code != single || body != singleBody {
		t.Errorf("batch in an unknown session: got %d %q, want what a single message gets (%d %q), a 404", code, body, single, singleBody)
	}
	// A single message still passes untouched, leading whitespace and all.
	if code, body, _ := post("\r\n  " + `{"jsonrpc":"2.0","id":10,"method":"ping"}`); code != http.StatusOK || !strings.Contains(body, `"id":10`) {
		t.Errorf("single ping: got %d %q", code, body)
	}
}

// Over legacy SSE, each message of a batch posted to /message is answered
// on the event stream.
func TestBatchLegacySSE(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	f.Started()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.base+mcptransport.PathSSE, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				events <- strings.TrimSpace(v)
			}
		}
		close(events)
	}()
	next := func() string { t.Helper(); return receive(t, events, "SSE event") }
	endpoint := next()
	if !strings.HasPrefix(endpoint, "/") {
		endpoint = strings.TrimPrefix(endpoint, f.base)
	}
	post := func(body string) int {
		t.Helper()
		resp, err := http.Post(f.base+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	post(initBody)
	if e := next(); !strings.Contains(e, `"serverInfo"`) {
		t.Fatalf("initialize on the stream: got %s", e)
	}
	if code := post(`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`); code != http.StatusAccepted {
		t.Errorf("batch to /message: got %d, want 202", code)
	}
	var ids []string
	for len(ids) < 2 {
		var r rpc
		if err := json.Unmarshal([]byte(next()), &r); err != nil || r.Error != nil {
			t.Fatalf("response on the stream: %v %+v", err, r)
		}
		if r.ID != nil { // not a notification of the server's own
			ids = append(ids, string(r.ID))
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"2", "3"}) {
		t.Errorf("responses on the stream: got ids %v, want 2 and 3", ids)
	}
}

// Over stdio a batch line is answered with one array line holding its
// requests' responses; the lines around it are served as usual; a batch of
// notifications gets no answer; a cancelled request does not hold its
// batch back.
func TestBatchStdio(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	send, next := c.send, c.next
	send(initBody)
	if got := next(); !strings.Contains(got, `"serverInfo"`) {
		t.Fatalf("initialize: got %s", got)
	}
	send(`[{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
	send(`  [{"jsonrpc":"2.0","id":2,"method":"ping"}, {"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":"batched"}}}}, "junk"]`)
	line := next()
	got, nulls := byID(t, line)
	if len(got) != 2 || got["2"].Error != nil || !strings.Contains(string(got[`"x"`].Result), "Echo: batched") || len(nulls) != 1 || nulls[0].Error == nil || nulls[0].Error.Code != -32600 {
		t.Errorf("batch answer: got %s, want the ping, the echo and an Invalid Request error", line)
	}
	// A request cancelled in its own batch: the batch is answered without
	// it. The cancelled call may still answer (mcp-go reports the cancelled
	// context); that answer then comes alone, before or after the batch.
	cancelledAnswer := func(l string) bool { return strings.HasPrefix(l, "{") && strings.Contains(l, `"id":5`) }
	send(`[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:sleep","arguments":{"ms":5000}}}},{"jsonrpc":"2.0","id":6,"method":"ping"}]`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	for line = next(); cancelledAnswer(line); line = next() {
	}
	if got, nulls := byID(t, line); len(got) != 1 || len(nulls) != 0 || got["6"].Error != nil {
		t.Errorf("batch with a cancelled request: got %s, want the ping's response alone", line)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	for line = next(); cancelledAnswer(line); line = next() {
	}
	if line != `{"jsonrpc":"2.0","id":7,"result":{}}` {
		t.Errorf("ping after the batches: got %s", line)
	}
	c.close()
}

// stdioConn is a front served over a pair of pipes, as a client that
// launched it sees it.
type stdioConn struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

// startStdio resyncs and starts s, and serves it over stdio until the test
// ends (or close).
func startStdio(t *testing.T, s *Server) *stdioConn {
	t.Helper()
	return startStdioOpts(t, s, mcptransport.Options{})
}

// startStdioOpts is startStdio with the transport's options.
func startStdioOpts(t *testing.T, s *Server, opts mcptransport.Options) *stdioConn {
	t.Helper()
	s.Resync()
	s.Started()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	// At the test's end the client goes away as a real one does: its end
	// of stdin closes (which ends the front's stdin reader) and the front
	// stops; the front's end of stdout closes once it has returned (which
	// ends the line reader below).
	t.Cleanup(func() { inW.Close(); cancel() })
	c := &stdioConn{t: t, in: inW, lines: make(chan string, 16), done: make(chan error, 1)}
	go func() {
		err := transportOf(s, opts).ServeStdio(ctx, inR, outW)
		outW.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

// send writes one input line.
func (c *stdioConn) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next output line, skipping notifications the server may
// send on its own (a list_changed, a log message): the tests are about
// responses.
func (c *stdioConn) next() string {
	c.t.Helper()
	for {
		l := receive(c.t, c.lines, "stdio output line")
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method != "" && m.ID == nil {
			continue
		}
		return l
	}
}

// close ends the input and checks that ServeStdio returns cleanly.
func (c *stdioConn) close() {
	c.t.Helper()
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("ServeStdio at end of input: %v", err)
		}
	case <-time.After(10 * time.Second):
		c.t.Fatal("ServeStdio did not return at the end of its input")
	}
}

// receive returns the next value of ch, failing the test when ch is closed
// or stays empty for 10s.
func receive(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatalf("no more %ss: the stream ended", what)
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
	}
	return ""
}

// A large HTTP batch runs at most mcptransport.MaxBatchConcurrency of its messages at
// once, and answers every one.
func TestBatchConcurrencyBounded(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	gauge := mcpserver.NewMCPServer("gauge", "1.0.0", mcpserver.WithToolCapabilities(true))
	gauge.AddTool(mcp.NewTool("hold", mcp.WithDescription("Hold a slot for a moment.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			defer func() { mu.Lock(); running--; mu.Unlock() }()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("held"), nil
		})
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"gauge": gauge})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	f.Started()
	c := connect(t, f, "streamable", nil)
	session := c.GetSessionId()
	const n = 3 * mcptransport.MaxBatchConcurrency
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"gauge:hold"}}}`, i+1)
	}
	b.WriteString("]")
	_, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, session, b.String())
	got, nulls := byID(t, body)
	if len(got) != n || len(nulls) != 0 {
		t.Fatalf("batch of %d calls: got %d responses and %d errors without id: %s", n, len(got), len(nulls), body)
	}
	for id, r := range got {
		if r.Error != nil || !strings.Contains(string(r.Result), "held") {
			t.Errorf("response %s: got %+v", id, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most > mcptransport.MaxBatchConcurrency {
		t.Errorf("at most %d calls of the batch ran at once, want no more than %d", most, mcptransport.MaxBatchConcurrency)
	}
}
