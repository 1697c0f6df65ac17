package server

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// startCatalogFront serves a direct-mode front over a real upstream manager
// of servers, wired for prompts, resources and their updates, with each
// server's configured prefix.
func startCatalogFront(t *testing.T, servers map[string]config.ServerConfig) *front {
	t.Helper()
	return startCatalogFrontOpts(t, servers, Options{})
}

// startCatalogFrontOpts is startCatalogFront with opts (Mode and Prefix are
// set here).
func startCatalogFrontOpts(t *testing.T, servers map[string]config.ServerConfig, opts Options) *front {
	t.Helper()
	var s *Server
	mgr := upstream.New(&config.Config{MCPServers: servers}, upstream.Options{
		OnToolsChanged:    func(name string, tools []config.Tool) { s.ToolsChanged(name, tools) },
		OnCatalogChanged:  func(name string, c *upstream.Catalog) { s.CatalogChanged(name, c) },
		OnResourceUpdated: func(name, uri string) { s.ResourceUpdated(name, uri) },
	})
	t.Cleanup(func() { _ = mgr.Close() })
	prefix := func(name string) string { return servers[name].NamePrefix(name) }
	var err error
	opts.Mode, opts.Prefix = config.ModeDirect, prefix
	if s, err = New(Deps{Upstreams: mgr, Catalogs: mgr}, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mgr.Start(ctx)
	return serveFront(t, s, mcptransport.HTTPOptions{})
}

// TestResourceUpdatesOverSSE serves an mcp-go upstream with a prompt and a
// subscribable resource through the front's legacy SSE transport, with the
// real upstream manager: two SSE sessions read the prompt and the resource,
// one subscribes, and the upstream's notifications/resources/updated reaches
// that one only; once it leaves, the upstream subscription is dropped.
func TestResourceUpdatesOverSSE(t *testing.T) {
	var subscribed atomic.Int32
	hooks := &mcpserver.Hooks{}
	hooks.AddAfterSubscribe(func(context.Context, any, *mcp.SubscribeRequest, *mcp.EmptyResult) { subscribed.Add(1) })
	hooks.AddAfterUnsubscribe(func(context.Context, any, *mcp.UnsubscribeRequest, *mcp.EmptyResult) { subscribed.Add(-1) })
	us := mcpserver.NewMCPServer("docs", "1", mcpserver.WithResourceCapabilities(true, true), mcpserver.WithPromptCapabilities(true), mcpserver.WithHooks(hooks))
	us.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who")), func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greet", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("hello "+req.Params.Arguments["who"]))}), nil
	})
	us.AddResource(mcp.NewResource("docs://readme", "readme"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "docs://readme", Text: "read me"}}, nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(us))
	t.Cleanup(ts.Close)

	f := startCatalogFront(t, map[string]config.ServerConfig{"docs": {URL: ts.URL + "/mcp"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	updates := [2]chan string{make(chan string, 10), make(chan string, 10)}
	var clients [2]*client.Client
	for i := range clients {
		ch := updates[i]
		clients[i] = connect(t, f, "sse", func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				ch <- n.Params.AdditionalFields["uri"].(string)
			}
		})
	}
	got, err := clients[0].GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "docs__greet", Arguments: map[string]string{"who": "sse"}}})
	if err != nil || got.Messages[0].Content.(mcp.TextContent).Text != "hello sse" {
		t.Fatalf("prompts/get docs__greet: got %+v, %v; want hello sse", got, err)
	}
	read, err := clients[1].ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "docs://readme"}})
	if err != nil || read.Contents[0].(mcp.TextResourceContents).Text != "read me" {
		t.Fatalf("resources/read docs://readme: got %+v, %v", read, err)
	}
	resp, err := clients[0].GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(5)),
		Method: string(mcp.MethodResourcesSubscribe), Params: map[string]any{"uri": "docs://readme"},
	})
	if err != nil || resp.Error != nil {
		t.Fatalf("resources/subscribe: got %v / %+v", err, resp)
	}
	if subscribed.Load() != 1 {
		t.Fatalf("upstream subscriptions: got %d, want 1", subscribed.Load())
	}
	us.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "docs://readme"})
	select {
	case uri := <-updates[0]:
		if uri != "docs://readme" {
			t.Errorf("update: got %q, want docs://readme", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the subscribed session got no notifications/resources/updated within 10s")
	}
	select {
	case uri := <-updates[1]:
		t.Errorf("the session that did not subscribe got an update for %q", uri)
	case <-time.After(500 * time.Millisecond):
	}

	// The subscriber leaves: nobody wants the resource, so the upstream
	// subscription ends.
	_ = clients[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for subscribed.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("upstream subscriptions 10s after the only subscriber left: got %d, want 0", subscribed.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
