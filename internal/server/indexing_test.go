package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// TestRetrieveSaysWhileIndexing covers the instant between an upstream
// reporting itself ready and its tools reaching the index: the real
// upstream manager marks the server ready before it hands the tools over,
// and a retrieve_tools answered meanwhile used to say "No tools match"
// with nothing to tell the model the tools were on their way. The tool
// hand-over is held open here, so the instant lasts as long as the test
// needs.
func TestRetrieveSaysWhileIndexing(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newUpstreamServer()))
	t.Cleanup(ts.Close)

	var s *Server
	entered, release, applied := make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	mgr := upstream.New(&config.Config{MCPServers: map[string]config.ServerConfig{"srv": {URL: ts.URL + "/mcp"}}}, upstream.Options{
		OnToolsChanged: func(name string, tools []config.Tool) {
			if len(tools) > 0 {
				entered <- struct{}{}
				<-release
			}
			s.ToolsChanged(name, tools)
			if len(tools) > 0 {
				applied <- struct{}{}
			}
		},
	})
	t.Cleanup(func() { _ = mgr.Close() })
	var err error
	if s, err = New(Deps{Upstreams: mgr, Index: newWordIndex()}, Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go mgr.Start(ctx)

	retrieve := func() string {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "retrieve_tools"
		req.Params.Arguments = map[string]any{"query": "echo a message"}
		res, err := s.handleRetrieve(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("retrieve_tools: %v %+v", err, res)
		}
		return res.Content[0].(mcp.TextContent).Text
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the upstream never reported its tools")
	}
	if got := retrieve(); !strings.Contains(got, "Still indexing: srv (5 tools, not searched yet)") {
		t.Errorf("retrieve_tools while srv's tools are being indexed: got %q, want it to say srv is still indexing", got)
	}
	close(release)
	<-applied
	if got := retrieve(); !strings.Contains(got, "srv:echo") || strings.Contains(got, "Still indexing") {
		t.Errorf("retrieve_tools once indexed: got %q, want srv:echo and no indexing line", got)
	}
}
