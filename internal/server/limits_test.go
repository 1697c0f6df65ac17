package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// callBatch is a batch of n call_tool requests to tool.
func callBatch(n int, tool string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":%q,"arguments":{"message":"m"}}}}`, i+1, tool)
	}
	b.WriteString("]")
	return b.String()
}

// A batch longer than limits.max_batch is refused as a whole with an
// Invalid Request naming the key; one at the limit runs.
func TestBatchLengthLimit(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{Limits: mcptransport.Limits{MaxBatch: 5}})
	id := initSession(t, f)
	code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, callBatch(6, "test:echo"))
	if code != http.StatusBadRequest || !strings.Contains(body, "-32600") || !strings.Contains(body, "limits.max_batch") {
		t.Errorf("batch of 6 over a limit of 5: got %d %s", code, body)
	}
	code, body, _ = postMCP(t, f.base+mcptransport.PathStreamable, id, callBatch(5, "test:echo"))
	if got, _ := byID(t, body); code != http.StatusOK || len(got) != 5 {
		t.Errorf("batch of 5: got %d %s", code, body)
	}
}

// A body over limits.max_request_bytes gets 413 naming the key.
func TestRequestBodyLimit(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{Limits: mcptransport.Limits{MaxRequestBytes: 1000}})
	id := initSession(t, f)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":"` + strings.Repeat("x", 2000) + `"}}}}`
	code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limits.max_request_bytes") {
		t.Errorf("2 kB body over a 1000-byte limit: got %d %q", code, body)
	}
}

// A client that sends half a body loses the connection after
// limits.read_timeout instead of holding it for ever.
func TestHalfSentBodyTimesOut(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{Limits: mcptransport.Limits{ReadTimeout: 300 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	// The server answers (408) and closes; a deadline far beyond the
	// read timeout only keeps a broken test from hanging.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to a half-sent body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("half-sent body: got %d, want 408", resp.StatusCode)
	}
}

// A request whose id is an object, an array or a boolean is an Invalid
// Request (-32600), not a Parse error: the JSON is fine. In a batch too.
func TestObjectIDIsInvalidRequest(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	id := initSession(t, f)
	for _, bad := range []string{`{"a":1}`, `[1]`, `true`} {
		code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, `{"jsonrpc":"2.0","id":`+bad+`,"method":"ping"}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "-32600") || strings.Contains(body, "-32700") {
			t.Errorf("id %s: got %d %s, want 400 with -32600", bad, code, body)
		}
	}
	_, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, `[{"jsonrpc":"2.0","id":{"a":1},"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if !strings.Contains(body, "-32600") || !strings.Contains(body, `"id":2,"result"`) {
		t.Errorf("batch with an object id: got %s, want -32600 for it and the ping answered", body)
	}
}

// A batch whose client goes away starts none of its remaining calls.
func TestBatchStopsWithItsClient(t *testing.T) {
	var started atomic.Int32
	var once sync.Once
	full := make(chan struct{})
	slow := mcpserver.NewMCPServer("slow", "1.0.0", mcpserver.WithToolCapabilities(true))
	slow.AddTool(mcp.NewTool("wait", mcp.WithDescription("Wait until cancelled.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if started.Add(1) == mcptransport.MaxBatchConcurrency {
				once.Do(func() { close(full) })
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
			return mcp.NewToolResultText("done"), nil
		})
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"slow": slow})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	id := initSession(t, f)

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base+mcptransport.PathStreamable, strings.NewReader(callBatch(4*mcptransport.MaxBatchConcurrency, "slow:wait")))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-full:
	case <-time.After(10 * time.Second):
		t.Fatalf("the batch's first %d calls never all started (%d did)", mcptransport.MaxBatchConcurrency, started.Load())
	}
	cancel()
	<-errc
	// Were the batch to go on, the next calls would start as soon as the
	// cancelled ones return; give them ample time to.
	time.Sleep(time.Second)
	if got := started.Load(); got != mcptransport.MaxBatchConcurrency {
		t.Errorf("%d calls started after the client left with %d running, want none more", got, mcptransport.MaxBatchConcurrency)
	}
}

// A tool name far longer than any known tool is answered "unknown tool"
// without a fuzzy search, and the answer does not echo it whole.
func TestLongUnknownToolName(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	f.Started()
	c := connect(t, f, "streamable", nil)
	name := "test:" + strings.Repeat("echo", 50000)
	res := callTool(t, c, ToolCall, map[string]any{"name": name, "arguments": map[string]any{}})
	got := text(res)
	if !res.IsError || !strings.Contains(got, "Unknown tool") || strings.Contains(got, "Closest matches") {
		t.Errorf("200 kB tool name: got %.300q, want an unknown-tool error without suggestions", got)
	}
	if len(got) > 1000 {
		t.Errorf("the error is %d bytes long: the name was echoed whole", len(got))
	}
	// A short misspelling still gets its suggestion.
	if got := text(callTool(t, c, ToolCall, map[string]any{"name": "test:ecko", "arguments": map[string]any{}})); !strings.Contains(got, "test:echo") {
		t.Errorf("short misspelling: got %q, want test:echo suggested", got)
	}
}

// BenchmarkUnknownToolName measures call_tool with an unknown 4 MB tool name
// against the same call with an unknown name of ordinary length, in the same
// run, through an in-process client; it reports both and their ratio
// (before the length cap, the long name's edit distance took ~24 s of CPU).
//
//	go test -run '^$' -bench UnknownToolName -benchtime 5x ./internal/server
func BenchmarkUnknownToolName(b *testing.B) {
	up := newTestUpstreams(b, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Resync()
	ctx := context.Background()
	call := func(name string) time.Duration {
		req := mcp.CallToolRequest{}
		req.Params.Name = ToolCall
		req.Params.Arguments = map[string]any{"name": name, "arguments": map[string]any{}}
		start := time.Now()
		res, err := s.handleCall(ctx, req)
		if err != nil || !res.IsError {
			b.Fatalf("unknown tool %.40q: got %v, %v", name, res, err)
		}
		return time.Since(start)
	}
	long := "test:" + strings.Repeat("x", 4<<20)
	var short, huge time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		short += call("test:ecko_message")
		huge += call(long)
	}
	b.ReportMetric(float64(short.Nanoseconds())/float64(b.N), "short-ns/op")
	b.ReportMetric(float64(huge.Nanoseconds())/float64(b.N), "4MB-ns/op")
	b.ReportMetric(float64(huge)/float64(max(short, 1)), "4MB/short")
}

// Over stdio too, an object id is an Invalid Request, alone or in a batch.
func TestObjectIDOverStdio(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	c.send(initBody)
	c.next()
	c.send(`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`)
	if got := c.next(); !strings.Contains(got, "-32600") {
		t.Errorf("object id over stdio: got %s, want -32600", got)
	}
	c.send(`[{"jsonrpc":"2.0","id":[1],"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if got := c.next(); !strings.Contains(got, "-32600") || !strings.Contains(got, `"id":2,"result"`) {
		t.Errorf("batch with an array id over stdio: got %s, want -32600 for it and the ping answered", got)
	}
	c.close()
}
