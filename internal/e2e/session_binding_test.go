package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// A session is bound to the token that opened it (issue 31): a second
// client token of the same profile that learned another client's session
// id gets, on that id, exactly the answer of an id that does not exist
// (404 over streamable HTTP for POST, GET and DELETE; legacy SSE's answer
// for an unknown sessionId), and the owner's session goes on working.
func TestSessionBoundToItsToken(t *testing.T) {
	needNode(t)
	t.Parallel()
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers":   map[string]any{"memory": map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory")}},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
		"auth_token":   "e2e-admin-token",
		"profiles":     map[string]any{"mem": map[string]any{"servers": []string{"memory"}, "mode": "direct"}},
	})
	create := func(name string) string {
		code, out, errOut := runBinary(t, 30*time.Second, "tokens", "create", name, "--profile", "mem", "--config", config)
		if code != 0 {
			t.Fatalf("tokens create %s: %d\n%s%s", name, code, out, errOut)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		return lines[len(lines)-1]
	}
	owner, other := create("owner-app"), create("other-app")
	base, p := serveHTTP(t, config)

	// send is one raw request as other's client makes it.
	send := func(method, url, session, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+other)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s %s: %v\nmcproxy:\n%s", method, url, err, p.output())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const list = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	madeUp := "mcp-" + strings.Repeat("ab", 16)

	t.Run("streamable HTTP", func(t *testing.T) {
		c := startHTTP(t, base+"/mcp/p/mem", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + owner}))
		initialize(t, c)
		id := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
		if id == "" {
			t.Fatal("the owner's session has no id")
		}
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if method == http.MethodPost {
				body = list
			}
			gotStatus, gotBody := send(method, base+"/mcp/p/mem", id, body)
			wantStatus, wantBody := send(method, base+"/mcp/p/mem", madeUp, body)
			if gotStatus != http.StatusNotFound || gotStatus != wantStatus || gotBody != wantBody {
				t.Errorf("%s with the owner's session id and another token: %d %q, want what an unknown id gets: 404 (got %d %q)",
					method, gotStatus, gotBody, wantStatus, wantBody)
			}
		}
		if tools := listTools(t, c); len(tools) == 0 {
			t.Error("the owner's session lists no tools after the other token's attempts")
		}
	})

	t.Run("legacy SSE", func(t *testing.T) {
		c, err := client.NewSSEMCPClient(base+"/sse/p/mem", client.WithHeaders(map[string]string{"Authorization": "Bearer " + owner}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		endpoint := c.GetTransport().(*transport.SSE).GetEndpoint()
		if endpoint == nil || endpoint.Query().Get("sessionId") == "" {
			t.Fatalf("the SSE stream announced no session: %v", endpoint)
		}
		gotStatus, gotBody := send(http.MethodPost, endpoint.String(), "", list)
		q := endpoint.Query()
		q.Set("sessionId", madeUp)
		unknown := *endpoint
		unknown.RawQuery = q.Encode()
		wantStatus, wantBody := send(http.MethodPost, unknown.String(), "", list)
		if gotStatus < 400 || gotStatus != wantStatus || gotBody != wantBody {
			t.Errorf("a post to the owner's SSE session with another token: %d %q, want what an unknown session gets (%d %q)",
				gotStatus, gotBody, wantStatus, wantBody)
		}
		if tools := listTools(t, c); len(tools) == 0 {
			t.Error("the owner's SSE session lists no tools after the other token's attempt")
		}
	})
}
