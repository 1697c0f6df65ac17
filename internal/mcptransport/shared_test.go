package mcptransport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
// which never saw the session, streams the tool's info message. Without
// the stored level B would rebuild the session at mcp-go's default level
// (error) and drop it.
func TestSharedSessionKeepsLogLevel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := pgstore.Open(ctx, testenv.Postgres(t), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	store := st.ClientSessions(time.Minute)
	replica := func() string {
		s := mcpserver.NewMCPServer("replica", "1.0.0", mcpserver.WithLogging(), mcpserver.WithToolCapabilities(false))
		s.AddTool(mcp.NewTool("say", mcp.WithDescription("Log hello at info.")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "replica", "hello at info")); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText("said"), nil
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
	a, b := replica(), replica()

	c, err := client.NewStreamableHttpClient(a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "level-test", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	set := mcp.SetLevelRequest{}
	set.Params.Level = mcp.LoggingLevelInfo
	if err := c.SetLevel(ctx, set); err != nil {
		t.Fatal(err)
	}
	id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"say","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcpserver.HeaderKeySessionID, id)
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"said"`) {
		t.Fatalf("tools/call on the other replica: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(string(body), "hello at info") {
		t.Errorf("the other replica dropped the info message the client asked for with logging/setLevel on the first: %s", body)
	}
}
