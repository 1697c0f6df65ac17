package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// newUpstreamServer is a real mcp-go MCP server used as an upstream: tools
// with plain, structured, failing and slow results.
func newUpstreamServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("test-upstream", "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echo a message back unchanged."),
		mcp.WithString("message", mcp.Required(), mcp.Description("Text to echo.")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg, err := req.RequireString("message")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", mcp.ErrInvalidParams, err)
		}
		return mcp.NewToolResultText("Echo: " + msg), nil
	})
	s.AddTool(mcp.NewTool("add",
		mcp.WithDescription("Add two numbers and return their sum."),
		mcp.WithNumber("a", mcp.Required()),
		mcp.WithNumber("b", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, b := req.GetFloat("a", 0), req.GetFloat("b", 0)
		return mcp.NewToolResultStructured(map[string]any{"sum": a + b}, fmt.Sprint(a+b)), nil
	})
	s.AddTool(mcp.NewTool("fail",
		mcp.WithDescription("Always fails with a tool error."),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("boom: the disk is on fire"), nil
	})
	s.AddTool(mcp.NewTool("sleep",
		mcp.WithDescription("Wait for the given number of milliseconds."),
		mcp.WithNumber("ms", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	s.AddTool(mcp.NewTool("read_file",
		mcp.WithDescription("Read the contents of a file from disk."),
		mcp.WithString("path", mcp.Required(), mcp.Description("File path.")),
		mcp.WithNumber("head", mcp.Description("Only the first N lines.")),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("contents of " + req.GetString("path", "")), nil
	})
	return s
}

// testUpstreams implements Upstreams over real in-process mcp-go clients.
// Faults it cannot cause in-process (a server going down) are set with down.
type testUpstreams struct {
	timeout time.Duration

	mu      sync.Mutex
	clients map[string]*client.Client
	tools   map[string][]mcp.Tool
	down    map[string]*upstream.DownError
	// onStatus, when set, is called after each Status, outside mu: a test
	// sees when the front looks at the upstreams and changes them then.
	onStatus func()
}

func newTestUpstreams(t testing.TB, servers map[string]*mcpserver.MCPServer) *testUpstreams {
	t.Helper()
	u := &testUpstreams{
		timeout: 5 * time.Second,
		clients: map[string]*client.Client{},
		tools:   map[string][]mcp.Tool{},
		down:    map[string]*upstream.DownError{},
	}
	ctx := context.Background()
	for name, srv := range servers {
		c, err := client.NewInProcessClient(srv)
		if err != nil {
			t.Fatalf("in-process client for %s: %v", name, err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(ctx); err != nil {
			t.Fatalf("starting %s: %v", name, err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "0"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatalf("initializing %s: %v", name, err)
		}
		u.clients[name] = c
		if err := u.refresh(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

func (u *testUpstreams) refresh(ctx context.Context, name string) error {
	u.mu.Lock()
	c := u.clients[name]
	u.mu.Unlock()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("listing tools of %s: %w", name, err)
	}
	u.mu.Lock()
	u.tools[name] = res.Tools
	u.mu.Unlock()
	return nil
}

func (u *testUpstreams) serverTools(name string) []config.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.down[name] != nil {
		return nil
	}
	var out []config.Tool
	for _, mt := range u.tools[name] {
		schema, err := json.Marshal(mt.InputSchema)
		if err != nil {
			panic(err)
		}
		out = append(out, config.Tool{ID: config.ToolID(name, mt.Name), Server: name, Name: mt.Name, Description: mt.Description, Schema: schema})
	}
	slices.SortFunc(out, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (u *testUpstreams) Tools() []config.Tool {
	u.mu.Lock()
	names := make([]string, 0, len(u.clients))
	for n := range u.clients {
		names = append(names, n)
	}
	u.mu.Unlock()
	var out []config.Tool
	for _, n := range names {
		out = append(out, u.serverTools(n)...)
	}
	slices.SortFunc(out, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (u *testUpstreams) MCPTool(server, name string) (mcp.Tool, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range u.tools[server] {
		if t.Name == name {
			return t, true
		}
	}
	return mcp.Tool{}, false
}

func (u *testUpstreams) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	c, ok := u.clients[server]
	down := u.down[server]
	u.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q", upstream.ErrUnknownServer, server)
	}
	if down != nil {
		return nil, down
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &upstream.TimeoutError{Server: server, Tool: tool, Limit: u.timeout, Setting: "mcpServers." + server + ".call_timeout"}
	}
	return res, err
}

func (u *testUpstreams) Status() []upstream.Status {
	u.mu.Lock()
	hook := u.onStatus
	defer func() {
		if hook != nil {
			hook()
		}
	}()
	defer u.mu.Unlock()
	var out []upstream.Status
	for name := range u.clients {
		st := upstream.Status{Server: name, Transport: "inprocess", State: upstream.StateReady, Tools: len(u.tools[name])}
		if d := u.down[name]; d != nil {
			st.State, st.LastError, st.RetryAt, st.Tools = d.State, d.LastError, d.RetryAt, 0
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b upstream.Status) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// wordIndex is a small term-overlap index for unit tests; the Bleve index
// is exercised through cmd/mcproxy and the end-to-end tests.
type wordIndex struct {
	mu   sync.Mutex
	docs map[string][]config.ToolMetadata
}

func newWordIndex() *wordIndex { return &wordIndex{docs: map[string][]config.ToolMetadata{}} }

func (x *wordIndex) Upsert(server string, tools []config.ToolMetadata) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.docs[server] = slices.Clone(tools)
	return nil
}

func (x *wordIndex) Remove(server string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.docs, server)
	return nil
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func (x *wordIndex) Search(_ context.Context, query string, limit int) (retrieval.Ranking, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	q := words(query)
	var hits []index.Hit
	for _, docs := range x.docs {
		for _, d := range docs {
			text := words(d.Name + " " + d.Description)
			score := 0.0
			for _, w := range q {
				if slices.Contains(text, w) {
					score++
				}
			}
			if score > 0 {
				hits = append(hits, index.Hit{ID: d.ID(), Server: d.ServerName, Name: d.Name, Score: score})
			}
		}
	}
	slices.SortFunc(hits, func(a, b index.Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return retrieval.Ranking{Hits: hits}, nil
}

// front is a Server serving HTTP on a loopback port for one test.
type front struct {
	*Server
	base string
}

func startFront(t *testing.T, up Upstreams, ix Index, opts Options, httpOpts mcptransport.HTTPOptions) *front {
	t.Helper()
	s, err := New(Deps{Upstreams: up, Index: ix}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return serveFront(t, s, httpOpts)
}

// serveFront resyncs s and serves it over HTTP on a loopback port until the
// test ends.
func serveFront(t *testing.T, s *Server, httpOpts mcptransport.HTTPOptions) *front {
	t.Helper()
	s.Resync()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, transportOf(s, mcptransport.Options{}), ln, httpOpts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &front{Server: s, base: "http://" + ln.Addr().String()}
}

// connect opens an initialized mcp-go client to f over kind ("streamable",
// "sse" or "inprocess").
func connect(t *testing.T, f *front, kind string, onNotify func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	return connectVersion(t, f, kind, mcp.LATEST_LEGACY_PROTOCOL_VERSION, onNotify)
}

// connectVersion is connect with a chosen protocol version; "" lets the
// client negotiate the newest one the server speaks.
func connectVersion(t *testing.T, f *front, kind, version string, onNotify func(mcp.JSONRPCNotification)) *client.Client {
	t.Helper()
	var c *client.Client
	var err error
	switch kind {
	case "streamable":
		var opts []transport.StreamableHTTPCOption
		if version != "" && !mcp.IsModernProtocol(version) {
			// The standalone GET stream carries list_changed; the stateless
			// protocol has no such stream (and mcp-go then stays legacy).
			opts = append(opts, transport.WithContinuousListening())
		}
		c, err = client.NewStreamableHttpClient(f.base+mcptransport.PathStreamable, opts...)
	case "sse":
		c, err = client.NewSSEMCPClient(f.base + mcptransport.PathSSE)
	case "inprocess":
		c, err = client.NewInProcessClient(f.MCP())
	default:
		t.Fatalf("unknown client kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if onNotify != nil {
		c.OnNotification(onNotify)
	}
	// Start's context owns the client's streams for its whole life.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("starting %s client: %v", kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "server-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initializing %s client: %v", kind, err)
	}
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

// text joins a result's text contents.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("listing tools: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// transportOf is the transport front (internal/transport) serving s.
func transportOf(s *Server, opts mcptransport.Options) *mcptransport.Front {
	f, err := mcptransport.New(mcptransport.Deps{MCP: s.MCP(), Lifts: s.Lifts(), Log: s.log}, opts)
	if err != nil {
		panic(err) // only a nil MCP server fails
	}
	return f
}

// serveHTTP serves f's MCP transports alone on ln until ctx ends.
func serveHTTP(ctx context.Context, f *mcptransport.Front, ln net.Listener, opts mcptransport.HTTPOptions) error {
	h, closeSessions := f.Handler(opts)
	return f.Serve(ctx, ln, h, closeSessions)
}
