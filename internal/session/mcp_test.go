package session

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// newMCPFront is an mcp-go server wired the way internal/server should wire
// the manager: the recording middleware, Compress and read_archive, noa's
// instructions, and hosts released when a client session ends. Its one
// ordinary tool, "bulky", returns deterministic prose of the requested size
// tagged with the caller's marker.
func newMCPFront(t *testing.T, m *Manager) string {
	t.Helper()
	hooks := &mcpserver.Hooks{}
	hooks.AddOnUnregisterSession(func(ctx context.Context, s mcpserver.ClientSession) { m.Release(SessionIDFor(s, "stdio-test")) })
	idOf := ClientSessionID("stdio-test")
	srv := mcpserver.NewMCPServer("front", "test",
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithInstructions(Instructions()),
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolHandlerMiddleware(m.Middleware(idOf)),
	)
	srv.AddTool(mcp.NewTool("bulky", mcp.WithString("marker"), mcp.WithNumber("words"), mcp.WithNumber("seed")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			marker := req.GetString("marker", "")
			n := req.GetInt("words", 100)
			seed := req.GetInt("seed", 1)
			return mcp.NewToolResultText(marker + " " + words(newRand(int64(seed)), n)), nil
		})
	srv.AddTool(CompressTool(), m.CompressHandler(idOf))
	srv.AddTool(ReadArchiveTool(), m.ReadArchiveHandler(idOf))
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func connect(t *testing.T, url string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, init
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// Two clients of one proxy, working at the same time over streamable HTTP,
// each get their own refs, blocks and archives: neither sees the other's.
func TestMCPClientsIsolated(t *testing.T) {
	opts := testOptions(t)
	m := NewManager(opts)
	t.Cleanup(func() { m.Close() })
	url := newMCPFront(t, m)

	type outcome struct {
		marker, block, archive string
		firstTag               string
	}
	results := make([]outcome, 2)
	var wg sync.WaitGroup
	for i := range results {
		c, init := connect(t, url)
		if !strings.Contains(init.Instructions, noa.SystemPromptHeader) {
			t.Fatalf("initialize instructions lack noa's prompt: %q", init.Instructions)
		}
		wg.Add(1)
		go func(i int, c *client.Client) {
			defer wg.Done()
			marker := fmt.Sprintf("CLIENT-%d-MARKER", i)
			o := &results[i]
			o.marker = marker
			for j := 0; j < 200; j++ {
				res := callTool(t, c, "bulky", map[string]any{"marker": marker, "words": 900, "seed": j})
				tx := texts(res)
				if j == 0 {
					o.firstTag = tx[1]
				}
				if !strings.HasPrefix(tx[0], marker) {
					t.Errorf("client %d got another client's result", i)
					return
				}
				n := nudgeOf(res)
				if n == "" {
					continue
				}
				out := callTool(t, c, noa.CompressToolName, mustObject(compressArgs(rangesOf(n))))
				if out.IsError {
					t.Errorf("client %d Compress: %q", i, texts(out))
					return
				}
				o.block = "b1"
				page := callTool(t, c, ReadArchiveToolName, map[string]any{"block": "b1"})
				o.archive = texts(page)[0]
				return
			}
			t.Errorf("client %d never got a nudge", i)
		}(i, c)
	}
	wg.Wait()
	for i, o := range results {
		if o.firstTag == "" || !strings.HasPrefix(o.firstTag, "[m00002 ") {
			t.Errorf("client %d: first tag %q, want its own numbering from m00002", i, o.firstTag)
		}
		other := results[1-i].marker
		if !strings.Contains(o.archive, o.marker) || strings.Contains(o.archive, other) {
			t.Errorf("client %d's archive b1: has own marker %v, has the other's %v; want only its own",
				i, strings.Contains(o.archive, o.marker), strings.Contains(o.archive, other))
		}
	}
	// Two session directories, each with its own transcript and archive.
	dirs, _ := os.ReadDir(opts.Dir)
	if len(dirs) != 2 {
		t.Fatalf("got %d session directories, want 2", len(dirs))
	}
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(opts.Dir, d.Name(), TranscriptFile))
		has0, has1 := strings.Contains(string(b), results[0].marker), strings.Contains(string(b), results[1].marker)
		if has0 == has1 {
			t.Errorf("transcript of %s holds markers of client 0: %v, client 1: %v; want exactly one", d.Name(), has0, has1)
		}
	}
}

func mustObject(raw []byte) map[string]any {
	var m map[string]any
	if err := jsonUnmarshal(raw, &m); err != nil {
		panic(err)
	}
	return m
}

// Calls of one session running in parallel are all recorded, each result
// after its call, with distinct refs.
func TestParallelCallsInOneSession(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				call(t, h, fmt.Sprintf("fs:%d", i), words(newRand(int64(i*100+j)), 50))
			}
		}(i)
	}
	wg.Wait()
	msgs := h.Messages()
	if len(msgs) != 320 {
		t.Fatalf("got %d messages, want 320", len(msgs))
	}
	seenCall := map[string]bool{}
	for _, m := range msgs {
		switch m.ContentType {
		case noa.CTToolCall:
			seenCall[m.ToolCallID] = true
		case noa.CTToolResult:
			if !seenCall[m.ToolCallID] {
				t.Fatalf("result %s recorded before its call", m.ID)
			}
		}
	}
	st := h.State()
	if got := len(st.MessageRefs.ByRef); got != 320 {
		t.Errorf("got %d refs, want 320", got)
	}
	h.Close()
	h2 := openHost(t, testOptionsIn(filepath.Dir(h.Dir())), "s")
	if !sameState(st, h2.State()) {
		t.Errorf("rebuilt after parallel calls: %s", stateDiff(st, h2.State()))
	}
}

// A request of the 2026-07-28 protocol has no session (each request is its
// own ephemeral session in mcp-go), so there is nothing to key a host on:
// the call passes through unrecorded rather than mixing clients.
func TestModernProtocolRequestPassesThrough(t *testing.T) {
	m := NewManager(testOptions(t))
	t.Cleanup(func() { m.Close() })
	url := newMCPFront(t, m)
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, c, "bulky", map[string]any{"marker": "M", "words": 10})
	if got := len(res.Content); got != 1 {
		t.Errorf("got %d content blocks, want 1 (passed through, no ref tag)", got)
	}
}

// Over stdio (mcp-go's constant session id "stdio") the host is keyed on the
// id this run was given.
func TestStdioSessionID(t *testing.T) {
	opts := testOptions(t)
	m := NewManager(opts)
	t.Cleanup(func() { m.Close() })
	stdioID := NewSessionID(time.Now())
	idOf := ClientSessionID(stdioID)
	srv := mcpserver.NewMCPServer("front", "test", mcpserver.WithToolHandlerMiddleware(m.Middleware(idOf)))
	srv.AddTool(mcp.NewTool("echo"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echoed"), nil
	})
	srvIn, cliOut := io.Pipe()
	cliIn, srvOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.NewStdioServer(srv).Listen(ctx, srvIn, srvOut) }()
	t.Cleanup(func() {
		cancel()
		cliOut.Close()
		srvOut.Close()
		<-done
	})
	c := client.NewClient(transport.NewIO(cliIn, cliOut, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, c, "echo", nil)
	if tx := texts(res); len(tx) != 2 || !strings.HasPrefix(tx[1], "[m00002 ") {
		t.Fatalf("got %q, want the result and its ref tag", tx)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, stdioID, TranscriptFile)); err != nil {
		t.Errorf("no transcript for the stdio session %s: %v", stdioID, err)
	}
}
