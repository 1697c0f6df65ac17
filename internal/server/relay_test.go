package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// The relay upstream runs as a child (this test binary) over stdio when
// relayUpstreamEnv is set, or in process over streamable HTTP.
const (
	relayUpstreamEnv = "MCPROXY_TEST_RELAY_UPSTREAM"
	relayDirEnv      = "MCPROXY_TEST_RELAY_DIR" // where "wait_elicit" leaves its marks
)

func init() {
	if os.Getenv(relayUpstreamEnv) == "" {
		return
	}
	if err := mcpserver.ServeStdio(newRelayUpstream(os.Getenv(relayDirEnv))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startRelayUpstream starts the relay upstream over kind ("stdio" or
// "http") and returns its config and the directory of its marks. The
// upstream speaks 2026-07-28 too, but its tools make server-to-client
// requests, which mcp-go's server refuses on 2026-07-28: mcproxy speaks
// 2025-11-25 to a server that offers both, and these tests show that it
// must (revisions_test.go has an upstream written for 2026-07-28).
func startRelayUpstream(t *testing.T, kind string) (config.ServerConfig, string) {
	t.Helper()
	dir := t.TempDir()
	if kind == "stdio" {
		return config.ServerConfig{
			Command: os.Args[0], Args: []string{"-test.run=^$"},
			Env: map[string]string{relayUpstreamEnv: "1", relayDirEnv: dir},
		}, dir
	}
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newRelayUpstream(dir)))
	t.Cleanup(ts.Close)
	return config.ServerConfig{URL: ts.URL + "/mcp"}, dir
}

func mark(dir, name string) { _ = os.WriteFile(filepath.Join(dir, name), nil, 0o600) }

func marked(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// newRelayUpstream is a real mcp-go server (2025-11-25) whose tools send
// what the relay carries: progress and log messages, and sampling,
// elicitation and roots requests back to their caller.
func newRelayUpstream(dir string) *mcpserver.MCPServer {
	srv := mcpserver.NewMCPServer("relay-upstream", "1", mcpserver.WithLogging(), mcpserver.WithToolCapabilities(false))
	srv.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(context.Context, mcp.JSONRPCNotification) {
		mark(dir, "roots-changed")
	})
	noArgs := func(name, desc string) mcp.Tool { return mcp.NewTool(name, mcp.WithDescription(desc)) }
	srv.AddTool(noArgs("slow", "reports progress three times and logs"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token any
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := 1; i <= 3; i++ {
			if token != nil {
				_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": token, "progress": i, "total": 3, "message": fmt.Sprintf("step %d", i),
				})
			}
		}
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "slow", "info from slow"))
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelDebug, "slow", "debug from slow"))
		// mcp-go's server writes notifications from another goroutine
		// than results, so a result can overtake them; a real server
		// sends them first. Give its writer time to catch up.
		time.Sleep(100 * time.Millisecond)
		return mcp.NewToolResultText(fmt.Sprintf("done, token seen upstream: %v", token)), nil
	})
	srv.AddTool(noArgs("steps", "reports progress twenty times"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
			return mcp.NewToolResultError("no progress token"), nil
		}
		for i := 1; i <= 20; i++ {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": 20,
			})
		}
		time.Sleep(100 * time.Millisecond) // as in slow: let the upstream's writer catch up
		return mcp.NewToolResultText("stepped"), nil
	})
	srv.AddTool(noArgs("level", "reports the log level the upstream session was set to"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cs, _ := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
		if cs == nil {
			return mcp.NewToolResultError("no logging session"), nil
		}
		return mcp.NewToolResultText("level=" + string(cs.GetLogLevel())), nil
	})
	srv.AddTool(noArgs("ask", "asks the client's model"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var req mcp.CreateMessageRequest
		req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("what is 2+2?")}}
		req.MaxTokens = 10
		res, err := srv.RequestSampling(ctx, req)
		if err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		return mcp.NewToolResultText("model said: " + textOf(res.Content)), nil
	})
	srv.AddTool(noArgs("ask_log", "asks the client's model, then logs"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var req mcp.CreateMessageRequest
		req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("and now?")}}
		req.MaxTokens = 10
		if _, err := srv.RequestSampling(ctx, req); err != nil {
			return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
		}
		_ = srv.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "ask_log", "after the answer"))
		time.Sleep(100 * time.Millisecond) // as slow does: let the notification go first
		return mcp.NewToolResultText("asked"), nil
	})
	srv.AddTool(noArgs("form", "asks the user through a form"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			return mcp.NewToolResultError("elicitation failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return mcp.NewToolResultText(fmt.Sprintf("action=%s content=%s", res.Action, b)), nil
	})
	srv.AddTool(noArgs("link", "asks the user to visit a URL"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Mode: mcp.ElicitationModeURL, Message: "sign in", ElicitationID: "e-1", URL: "https://example.test/login",
		}})
		if err != nil {
			return mcp.NewToolResultError("url elicitation failed: " + err.Error()), nil
		}
		return mcp.NewToolResultText("url action=" + string(res.Action)), nil
	})
	srv.AddTool(noArgs("roots", "lists the client's roots"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := srv.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return mcp.NewToolResultError("roots failed: " + err.Error()), nil
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return mcp.NewToolResultText("roots=" + strings.Join(uris, ",")), nil
	})
	srv.AddTool(noArgs("roots_late", "asks for the client's roots and returns before the answer"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		asked := make(chan struct{})
		go func() {
			close(asked)
			res, err := srv.RequestRoots(context.WithoutCancel(ctx), mcp.ListRootsRequest{})
			if err == nil && len(res.Roots) > 0 {
				mark(dir, "roots-late-answered")
			}
		}()
		<-asked
		time.Sleep(50 * time.Millisecond) // the request is on its way while the call is in flight
		return mcp.NewToolResultText("returned"), nil
	})
	srv.AddTool(noArgs("later", "logs once more after the call returned"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		go func() {
			time.Sleep(200 * time.Millisecond) // after the result, so no call is in flight
			_ = srv.SendLogMessageToClient(context.WithoutCancel(ctx), mcp.NewLoggingMessageNotification(mcp.LoggingLevelNotice, "later", "server-wide news"))
		}()
		return mcp.NewToolResultText("ok"), nil
	})
	srv.AddTool(noArgs("block", "blocks until cancelled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mark(dir, "blocking")
		select {
		case <-ctx.Done():
			mark(dir, "block-cancelled")
		case <-time.After(20 * time.Second):
		}
		return mcp.NewToolResultText("unblocked"), nil
	})
	srv.AddTool(noArgs("wait_elicit", "elicits and reports whether it was cancelled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mark(dir, "waiting")
		_, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message: "this one is never answered", RequestedSchema: map[string]any{"type": "object"},
		}})
		// The elicitation may fail (its client went away) a moment before
		// notifications/cancelled for the call arrives: wait for that.
		select {
		case <-ctx.Done():
			mark(dir, "cancelled")
		case <-time.After(5 * time.Second):
		}
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("answered"), nil
	})
	return srv
}

func textOf(c any) string {
	if tc, ok := c.(mcp.TextContent); ok {
		return tc.Text
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// relayFront is mcproxy's front in direct mode over a real upstream
// manager, served over HTTP; sniff records every response body it sent.
type relayFront struct {
	*Server
	url   string
	mu    sync.Mutex
	sniff bytes.Buffer
}

func (f *relayFront) sent() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sniff.String()
}

type sniffWriter struct {
	http.ResponseWriter
	f *relayFront
}

func (w sniffWriter) Write(b []byte) (int, error) {
	w.f.mu.Lock()
	w.f.sniff.Write(b)
	w.f.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

func (w sniffWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

func startRelayFront(t *testing.T, servers map[string]config.ServerConfig) *relayFront {
	t.Helper()
	return startRelayFrontMode(t, servers, config.ModeDirect)
}

func startRelayFrontMode(t *testing.T, servers map[string]config.ServerConfig, mode string) *relayFront {
	t.Helper()
	var front *Server
	mgr := upstream.New(&config.Config{MCPServers: servers}, upstream.Options{
		OnLog:             func(server string, n mcp.LoggingMessageNotification) { front.ServerLog(server, n) },
		OnToolsChanged:    func(server string, tools []config.Tool) { front.ToolsChanged(server, tools) },
		OnCatalogChanged:  func(server string, c *upstream.Catalog) { front.CatalogChanged(server, c) },
		OnResourceUpdated: func(server, uri string) { front.ResourceUpdated(server, uri) },
		// The relay upstream asks for roots in its calls and ignores
		// roots/list_changed: a session switch need not wait long to learn it.
		RootsWait: 100 * time.Millisecond,
	})
	t.Cleanup(func() { _ = mgr.Close() })
	deps := Deps{Upstreams: mgr, Catalogs: mgr, Logger: zap.NewNop()}
	if mode == config.ModeRetrieve {
		deps.Index = newWordIndex()
	}
	s, err := New(deps, Options{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	front = s
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mgr.Start(ctx)
	s.Resync()
	f := &relayFront{Server: s}
	h, closeSessions := transportOf(s, mcptransport.Options{}).Handler(mcptransport.HTTPOptions{})
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(sniffWriter{w, f}, r)
	}))
	ts.Listener.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Listener = ln
	ts.Start()
	t.Cleanup(func() {
		closeSessions(context.Background())
		ts.CloseClientConnections()
		ts.Close()
	})
	f.url = ts.URL + mcptransport.PathStreamable
	return f
}

// frontClient is a real mcp-go client of the front that can answer
// sampling, elicitation and roots (each only when its handler is set).
type frontClient struct {
	*client.Client
	mu     sync.Mutex
	notes  []mcp.JSONRPCNotification
	sample func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	elicit func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	roots  []mcp.Root
	// rootsDelay is how long the client takes to answer roots/list.
	rootsDelay time.Duration
}

func (c *frontClient) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return c.sample(ctx, req)
}

func (c *frontClient) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return c.elicit(ctx, req)
}

func (c *frontClient) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	time.Sleep(c.rootsDelay)
	return &mcp.ListRootsResult{Roots: c.roots}, nil
}

func (c *frontClient) notifications(method string) []mcp.JSONRPCNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []mcp.JSONRPCNotification
	for _, n := range c.notes {
		if n.Method == method {
			out = append(out, n)
		}
	}
	return out
}

// dialFront connects c to url on version ("" = the newest the front
// speaks, which is the stateless 2026-07-28).
func dialFront(t *testing.T, url, version string, c *frontClient) *frontClient {
	t.Helper()
	// A legacy client keeps the standalone GET stream open, as real
	// clients do: mcp-go's front sends sampling and roots requests only
	// there.
	var topts []transport.StreamableHTTPCOption
	if version != "" && !mcp.IsModernProtocol(version) {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if c.sample != nil {
		opts = append(opts, client.WithSamplingHandler(c))
	}
	if c.elicit != nil {
		opts = append(opts, client.WithElicitationHandler(c),
			client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}}))
	}
	if c.roots != nil {
		opts = append(opts, client.WithRootsHandler(c))
	}
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	c.Client = client.NewClient(tr, opts...)
	t.Cleanup(func() { c.Close() })
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		c.mu.Lock()
		c.notes = append(c.notes, n)
		c.mu.Unlock()
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "relay-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

func (c *frontClient) call(t *testing.T, name string, meta *mcp.Meta) string {
	t.Helper()
	return c.callArgs(t, name, map[string]any{}, meta)
}

func (c *frontClient) callArgs(t *testing.T, name string, args map[string]any, meta *mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = meta
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		b.WriteString(textOf(ct))
	}
	return b.String()
}

func answeringClient() *frontClient {
	return &frontClient{
		sample: func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{
				SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("four, said the client's model")},
				Model:           "client-model",
			}, nil
		},
		elicit: func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			if req.Params.Mode == mcp.ElicitationModeURL {
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
			}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
		},
		roots: []mcp.Root{{URI: "file:///work/client-root", Name: "root"}},
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, what, cond)
}

// TestRelayLegacyClient: a 2025-11-25 client of the front gets its own
// progress token back, the upstream's log messages at its level, and
// answers the upstream's sampling, elicitation (form and URL) and roots
// requests, all through one shared upstream connection.
//
// The upstream runs over stdio, where its requests are matched to the only
// call in flight. (Over streamable HTTP, mcp-go's server sends a call's
// progress on whichever stream of the session reads first, sometimes the
// standalone GET stream mcproxy keeps open, after the call's result: see
// TestRelayHTTPUpstream for what is checked there.)
func TestRelayLegacyClient(t *testing.T) {
	sc, dir := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())

	t.Run("progress", func(t *testing.T) {
		if seen := c.call(t, "up__slow", &mcp.Meta{ProgressToken: "client-token-7"}); !strings.Contains(seen, "token seen upstream: mcproxy-up-") {
			t.Errorf("upstream saw %q, want mcproxy's own token", seen)
		}
		waitFor(t, "3 progress notifications", func() bool { return len(c.notifications("notifications/progress")) == 3 })
		// mcp-go's front hands a session's notifications to whichever of
		// its streams (the call's, or the standalone GET stream) reads
		// first, so their order across the two is not kept.
		got := c.notifications("notifications/progress")
		slices.SortFunc(got, func(a, b mcp.JSONRPCNotification) int {
			return cmp.Compare(a.Params.AdditionalFields["progress"].(float64), b.Params.AdditionalFields["progress"].(float64))
		})
		for i, n := range got {
			p := n.Params.AdditionalFields
			if p["progressToken"] != "client-token-7" || p["progress"] != float64(i+1) || p["total"] != float64(3) || p["message"] != fmt.Sprintf("step %d", i+1) {
				t.Errorf("progress %d = %v, want the client's token with progress %d/3", i, p, i+1)
			}
		}
	})
	t.Run("no progress token, no progress", func(t *testing.T) {
		before := len(c.notifications("notifications/progress"))
		if got := c.call(t, "up__slow", nil); !strings.Contains(got, "token seen upstream: <nil>") {
			t.Errorf("upstream saw %q, want no token", got)
		}
		if n := len(c.notifications("notifications/progress")); n != before {
			t.Errorf("%d progress notifications for a call without a token", n-before)
		}
	})
	t.Run("logging", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var lr mcp.SetLevelRequest
		lr.Params.Level = mcp.LoggingLevelDebug
		if err := c.SetLevel(ctx, lr); err != nil {
			t.Fatal(err)
		}
		if got := c.call(t, "up__level", nil); got != "level=debug" {
			t.Errorf("upstream level: got %q, want level=debug", got)
		}
		before := len(c.notifications("notifications/message"))
		c.call(t, "up__slow", nil)
		waitFor(t, "2 log messages", func() bool { return len(c.notifications("notifications/message")) == before+2 })
		lr.Params.Level = mcp.LoggingLevelWarning
		if err := c.SetLevel(ctx, lr); err != nil {
			t.Fatal(err)
		}
		// The only session now asks for warning and up: so does the upstream.
		if got := c.call(t, "up__level", nil); got != "level=warning" {
			t.Errorf("upstream level: got %q, want level=warning", got)
		}
		before = len(c.notifications("notifications/message"))
		c.call(t, "up__slow", nil)
		c.call(t, "up__level", nil) // a round trip after, so a late message would have arrived
		if n := len(c.notifications("notifications/message")); n != before {
			t.Errorf("%d log messages below the session's level warning reached it", n-before)
		}
	})
	t.Run("sampling", func(t *testing.T) {
		if got := c.call(t, "up__ask", nil); got != "model said: four, said the client's model" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("elicitation form", func(t *testing.T) {
		if got := c.call(t, "up__form", nil); got != `action=accept content={"name":"Ada"}` {
			t.Errorf("got %q", got)
		}
	})
	t.Run("elicitation url", func(t *testing.T) {
		if got := c.call(t, "up__link", nil); got != "url action=accept" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("roots", func(t *testing.T) {
		if got := c.call(t, "up__roots", nil); got != "roots=file:///work/client-root" {
			t.Errorf("got %q", got)
		}
	})
	t.Run("roots list_changed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.RootListChanges(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the upstream to hear that the roots changed", func() bool { return marked(dir, "roots-changed") })
	})
}

// TestRelayRetrieveMode: call_tool relays exactly as a direct-mode tool
// does: progress with the client's token, and the upstream's requests.
func TestRelayRetrieveMode(t *testing.T) {
	sc, _ := startRelayUpstream(t, "stdio")
	f := startRelayFrontMode(t, map[string]config.ServerConfig{"up": sc}, config.ModeRetrieve)
	c := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	callTool := func(tool string, meta *mcp.Meta) string {
		return c.callArgs(t, ToolCall, map[string]any{"name": "up:" + tool, "arguments": map[string]any{}}, meta)
	}
	if got := callTool("slow", &mcp.Meta{ProgressToken: 42}); !strings.Contains(got, "token seen upstream: mcproxy-up-") {
		t.Errorf("slow: got %q", got)
	}
	waitFor(t, "3 progress notifications", func() bool { return len(c.notifications("notifications/progress")) == 3 })
	for _, n := range c.notifications("notifications/progress") {
		if tok := n.Params.AdditionalFields["progressToken"]; tok != float64(42) {
			t.Errorf("progress token %v (%T), want the client's 42", tok, tok)
		}
	}
	for tool, want := range map[string]string{
		"ask":   "model said: four, said the client's model",
		"form":  `action=accept content={"name":"Ada"}`,
		"roots": "roots=file:///work/client-root",
	} {
		if got := callTool(tool, nil); got != want {
			t.Errorf("%s: got %q, want %q", tool, got, want)
		}
	}
}

// TestRelayAmbiguousRequest: mcp-go's HTTP server sends its sampling and
// roots requests on the standalone GET stream, naming no call. With calls
// of two sessions in flight the upstream gets an error saying why mcproxy
// cannot choose; calls of one session in flight together are still
// answered by that session. (The ambiguity comes first: once the server
// has asked for roots, calls of different sessions no longer overlap.)
func TestRelayAmbiguousRequest(t *testing.T) {
	sc, dir := startRelayUpstream(t, "http")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	a := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())

	release := make(chan struct{})
	b := answeringClient()
	b.elicit = func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, b)
	done := make(chan string, 1)
	go func() { done <- b.call(t, "up__wait_elicit", nil) }()
	waitFor(t, "b's call to wait on its elicitation", func() bool { return marked(dir, "waiting") })
	got := a.call(t, "up__ask", nil)
	close(release)
	<-done
	for _, want := range []string{"no client to ask", "2 tool calls from 2 client sessions are in flight"} {
		if !strings.Contains(got, want) {
			t.Errorf("ask with two sessions in flight: got %q, want it to contain %q", got, want)
		}
	}

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if got := a.call(t, "up__ask", nil); got != "model said: four, said the client's model" {
				t.Errorf("ask: got %q", got)
			}
		}()
		go func() {
			defer wg.Done()
			if got := a.call(t, "up__roots", nil); got != "roots=file:///work/client-root" {
				t.Errorf("roots: got %q", got)
			}
		}()
	}
	wg.Wait()
}

// TestRelayClientWithoutCapabilities: the upstream of a client that
// declared no sampling, elicitation or roots gets an error saying so.
func TestRelayClientWithoutCapabilities(t *testing.T) {
	sc, _ := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, &frontClient{})
	for tool, want := range map[string]string{
		"up__ask":   `the client that made this call declared no "sampling" capability`,
		"up__form":  `declared no "elicitation" capability`,
		"up__roots": `declared no "roots" capability`,
	} {
		if got := c.call(t, tool, nil); !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want it to contain %q", tool, got, want)
		}
	}
}

// TestRelayDisconnectCancelsUpstream: a client that goes away while the
// upstream waits on its elicitation gets the upstream call cancelled.
func TestRelayDisconnectCancelsUpstream(t *testing.T) {
	for _, kind := range []string{"stdio", "http"} {
		t.Run(kind, func(t *testing.T) { testDisconnectCancels(t, kind) })
	}
}

func testDisconnectCancels(t *testing.T, kind string) {
	sc, dir := startRelayUpstream(t, kind)
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	asked := make(chan struct{})
	c := answeringClient()
	c.elicit = func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		close(asked)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, c)
	errc := make(chan error, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "up__wait_elicit"
		_, err := c.CallTool(context.Background(), req)
		errc <- err
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never asked")
	}
	if !marked(dir, "waiting") {
		t.Fatal("the upstream did not record that it was waiting")
	}
	_ = c.Close()
	waitFor(t, "the upstream call to be cancelled after its client went away", func() bool { return marked(dir, "cancelled") })
	<-errc
}

// TestRelayStatelessClient: a 2026-07-28 client (mcp-go's, stateless)
// answers a 2025-11-25 upstream's sampling, elicitation and roots requests
// through multi round-trip input requests, and is never sent a
// server-to-client request.
func TestRelayStatelessClient(t *testing.T) {
	for _, kind := range []string{"stdio", "http"} {
		t.Run(kind, func(t *testing.T) { testStatelessClient(t, kind) })
	}
}

func testStatelessClient(t *testing.T, kind string) {
	sc, _ := startRelayUpstream(t, kind)
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := dialFront(t, f.url, "", answeringClient())
	if got := c.GetTransport().(*transport.StreamableHTTP).RequiresLegacyProtocol(); got {
		t.Fatal("the client fell back to the legacy protocol; want 2026-07-28")
	}
	for tool, want := range map[string]string{
		"up__ask":   "model said: four, said the client's model",
		"up__form":  `action=accept content={"name":"Ada"}`,
		"up__link":  "url action=accept",
		"up__roots": "roots=file:///work/client-root",
	} {
		if got := c.call(t, tool, nil); got != want {
			t.Errorf("%s: got %q, want %q", tool, got, want)
		}
	}
	sent := f.sent()
	if n := strings.Count(sent, `"resultType":"input_required"`); n != 4 {
		t.Errorf("the front sent %d input_required results, want 4 (one per upstream request)", n)
	}
	for _, m := range []string{`"method":"sampling/createMessage"`, `"method":"elicitation/create"`, `"method":"roots/list"`} {
		if strings.Contains(sent, m) && !strings.Contains(sent, `"inputRequests"`) {
			t.Errorf("the front sent %s as a server-to-client request to a stateless client", m)
		}
	}
}

// TestRelayStatelessCancel: a stateless client that gives up on a call
// (its request ends) gets the upstream call cancelled, though the call
// runs apart from the request so that it could be parked.
func TestRelayStatelessCancel(t *testing.T) {
	sc, dir := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := dialFront(t, f.url, "", answeringClient())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var req mcp.CallToolRequest
		req.Params.Name = "up__block"
		_, err := c.CallTool(ctx, req)
		errc <- err
	}()
	waitFor(t, "the upstream call to start", func() bool { return marked(dir, "blocking") })
	cancel()
	if err := <-errc; err == nil {
		t.Error("the cancelled call succeeded")
	}
	waitFor(t, "the upstream call to be cancelled", func() bool { return marked(dir, "block-cancelled") })
}

// TestRelayServerWideLog: a log message the upstream sends with no call in
// flight reaches every session at its level, and mcproxy's own messages
// (an upstream's tools gone) reach them too.
func TestRelayServerWideLog(t *testing.T) {
	sc, _ := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	a := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	b := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	quiet := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c, level := range map[*frontClient]mcp.LoggingLevel{a: mcp.LoggingLevelInfo, b: mcp.LoggingLevelDebug, quiet: mcp.LoggingLevelError} {
		var lr mcp.SetLevelRequest
		lr.Params.Level = level
		if err := c.SetLevel(ctx, lr); err != nil {
			t.Fatal(err)
		}
	}
	a.call(t, "up__later", nil)
	data := func(c *frontClient) []string {
		var out []string
		for _, n := range c.notifications("notifications/message") {
			out = append(out, fmt.Sprint(n.Params.AdditionalFields["logger"], ": ", n.Params.AdditionalFields["data"]))
		}
		return out
	}
	for _, c := range []*frontClient{a, b} {
		waitFor(t, "the server-wide message", func() bool { return slices.Contains(data(c), "later: server-wide news") })
	}
	f.ToolsChanged("up", nil)
	for _, c := range []*frontClient{a, b} {
		waitFor(t, "mcproxy's own message", func() bool {
			return slices.ContainsFunc(data(c), func(s string) bool { return strings.HasPrefix(s, `mcproxy: upstream "up" is down`) })
		})
	}
	if err := quiet.Ping(ctx); err != nil { // a round trip, so anything sent to it has arrived
		t.Fatal(err)
	}
	if got := data(quiet); len(got) != 0 {
		t.Errorf("a session at level error got %q", got)
	}
}

// TestRelayProgressPerSession: two sessions' calls in flight on one
// upstream connection each get their own progress, under their own token.
func TestRelayProgressPerSession(t *testing.T) {
	sc, _ := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	clients := []*frontClient{
		dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient()),
		dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient()),
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.call(t, "up__slow", &mcp.Meta{ProgressToken: fmt.Sprintf("session-%d", i)})
		}()
	}
	wg.Wait()
	for i, c := range clients {
		waitFor(t, "3 progress notifications", func() bool { return len(c.notifications("notifications/progress")) >= 3 })
		if c.call(t, "up__level", nil); len(c.notifications("notifications/progress")) != 3 {
			t.Errorf("session %d got %d progress notifications, want its own 3", i, len(c.notifications("notifications/progress")))
		}
		for _, n := range c.notifications("notifications/progress") {
			if tok := n.Params.AdditionalFields["progressToken"]; tok != fmt.Sprintf("session-%d", i) {
				t.Errorf("session %d got progress for token %v", i, tok)
			}
		}
	}
}

// TestRelayProgressInOrderOnTheCallsStream: a legacy client with its GET
// stream open gets all of a call's progress, in order, before the call's
// result. mcp-go hands a session's notifications to whichever of its
// streams reads first, so some used to go to the GET stream and arrive out
// of order or after the result (the conformance suite's "Progress values
// should be increasing" failed so); the relay now writes them on the
// call's own stream (mcptransport.Notify).
func TestRelayProgressInOrderOnTheCallsStream(t *testing.T) {
	sc, _ := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())
	for round := range 3 {
		token := fmt.Sprintf("round-%d", round)
		if got := c.call(t, "up__steps", &mcp.Meta{ProgressToken: token}); got != "stepped" {
			t.Fatalf("steps: got %q", got)
		}
		var got []any
		for _, n := range c.notifications("notifications/progress") {
			if n.Params.AdditionalFields["progressToken"] == token {
				got = append(got, n.Params.AdditionalFields["progress"])
			}
		}
		want := make([]any, 20)
		for i := range want {
			want[i] = float64(i + 1)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: progress received by the time the result came: %v, want %v", round, got, want)
		}
	}
}

// TestRelayRootsAnsweredAfterTheCall: an upstream asks for the client's
// roots during a call (server-everything does on its first) and the call
// ends before the client answers. Roots are the session's, so the question
// outlives the call: the answer reaches the upstream, and the client is
// not refused for answering late (the Go SDK's client then failed its next
// request).
func TestRelayRootsAnsweredAfterTheCall(t *testing.T) {
	sc, dir := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	c := answeringClient()
	c.rootsDelay = 300 * time.Millisecond
	dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, c)
	if got := c.call(t, "up__roots_late", nil); got != "returned" {
		t.Fatalf("roots_late: got %q", got)
	}
	waitFor(t, "the upstream to get the client's late answer", func() bool { return marked(dir, "roots-late-answered") })
	if got := c.call(t, "up__level", nil); !strings.HasPrefix(got, "level=") {
		t.Errorf("the next call: got %q", got)
	}
}
