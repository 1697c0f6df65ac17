package mcptransport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// A session continued on another replica keeps the log level its client
// set on the first (issue 32): two fronts share one real PostgreSQL; the
// client initializes and sets level info on A; a tools/call sent to B,
// which never saw the session, finds the session at level info there.
// Without the stored level B would rebuild the session at mcp-go's
// default level and drop the tool's info messages.
func TestSharedSessionKeepsLogLevel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := sharedStore(ctx, t)
	a, b := sharedReplica(t, store, nil), sharedReplica(t, store, nil)

	c := sharedClient(ctx, t, a)
	set := mcp.SetLevelRequest{}
	set.Params.Level = mcp.LoggingLevelInfo
	if err := c.SetLevel(ctx, set); err != nil {
		t.Fatal(err)
	}
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()

	status, body := postIn(ctx, t, b, id, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"say","arguments":{}}}`)
	if status != http.StatusOK || !strings.Contains(body, `"said at level `) {
		t.Fatalf("tools/call on the other replica: %d %s", status, body)
	}
	// The session's level on B, not whether the info message made it into
	// this answer: mcp-go queues a session's notifications on one channel
	// that the answer may beat (the message then waits for another
	// stream), so only the level is certain.
	if !strings.Contains(body, "said at level info") {
		t.Errorf("the other replica holds the session at another level than the info its client set with logging/setLevel on the first: %s", body)
	}
}

// Concurrent first requests of one session on a replica that did not
// issue it rebuild it once: one replayed initialize, every request
// answered.
func TestSharedSessionAdoptedOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := sharedStore(ctx, t)
	var inits atomic.Int32
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterInitialize(func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) { inits.Add(1) })
	a, b := sharedReplica(t, store, nil), sharedReplica(t, store, hooks)
	c := sharedClient(ctx, t, a)
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()

	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = postIn(ctx, t, b, id, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
		})
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("request %d on the other replica: %d, want 200", i, s)
		}
	}
	if got := inits.Load(); got != 1 {
		t.Errorf("the other replica initialized the session %d times, want once", got)
	}
}

// sharedReplica serves a small mcp-go server (a tool "say" that logs
// hello at info) through a Front sharing its sessions in store, and
// returns its streamable HTTP URL. hooks, when not nil, are the server's.
func sharedReplica(t *testing.T, store SessionStore, hooks *mcpserver.Hooks) string {
	t.Helper()
	opts := []mcpserver.ServerOption{mcpserver.WithLogging(), mcpserver.WithToolCapabilities(false)}
	if hooks != nil {
		opts = append(opts, mcpserver.WithHooks(hooks))
	}
	s := mcpserver.NewMCPServer("replica", "1.0.0", opts...)
	s.AddTool(mcp.NewTool("say", mcp.WithDescription("Log hello at info.")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "replica", "hello at info")); err != nil {
			return nil, err
		}
		// The session's level as this replica holds it: the message
		// above goes through mcp-go's one notification queue of the
		// session, which may reach the client after the answer, so
		// the answer says the level too.
		level := "unknown"
		if ls, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging); ok {
			level = string(ls.GetLogLevel())
		}
		return mcp.NewToolResultText("said at level " + level), nil
	})
	f, err := New(Deps{MCP: s}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, closeSessions := f.Handler(HTTPOptions{Sessions: store})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		closeSessions(context.Background())
	})
	return srv.URL + PathStreamable
}

// sharedClient is an mcp-go client initialized at url; the test closes it.
func sharedClient(ctx context.Context, t *testing.T, url string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "shared-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// postIn posts body to url in session id, as a 2025-11-25 client, and
// returns the status and the body of the answer.
func postIn(ctx context.Context, t *testing.T, url, id, body string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpserver.HeaderKeySessionID, id)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sharedStore is the client sessions of a fresh database on the test's
// PostgreSQL; the test closes it.
func sharedStore(ctx context.Context, t *testing.T) SessionStore {
	t.Helper()
	st, err := pgstore.Open(ctx, testenv.Postgres(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st.ClientSessions(time.Minute)
}
