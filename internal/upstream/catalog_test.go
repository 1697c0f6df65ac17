package upstream

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// pagedServer is an mcp-go server over streamable HTTP that hands out its
// seven prompts, seven resources and seven templates two per page.
func pagedServer(t *testing.T) (*httptest.Server, *server.MCPServer) {
	t.Helper()
	s := server.NewMCPServer("paged", "1", server.WithPaginationLimit(2),
		server.WithPromptCapabilities(true), server.WithResourceCapabilities(true, true), server.WithInstructions("Ask for page seven."))
	for i := range 7 {
		s.AddPrompt(mcp.NewPrompt(fmt.Sprintf("p%d", i)), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("p", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(fmt.Sprint("prompt ", i)))}), nil
		})
		uri := fmt.Sprintf("paged://r/%d", i)
		s.AddResource(mcp.NewResource(uri, fmt.Sprintf("r%d", i)), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: fmt.Sprint("resource ", i)}}, nil
		})
		s.AddResourceTemplate(mcp.NewResourceTemplate(fmt.Sprintf("paged://t%d/{id}", i), fmt.Sprintf("t%d", i)), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return nil, nil
		})
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts, s
}

// TestCatalogAllPagesAndChanges lists every page of a paginating server's
// prompts, resources and templates, routes prompts/get and resources/read to
// it, and re-lists when it sends list_changed.
func TestCatalogAllPagesAndChanges(t *testing.T) {
	ts, s := pagedServer(t)
	changes := make(chan *Catalog, 10)
	m := startManager(t, map[string]config.ServerConfig{"paged": {URL: ts.URL + "/mcp"}}, Options{
		OnCatalogChanged: func(_ string, c *Catalog) { changes <- c },
	})
	cats := m.Catalogs()
	if len(cats) != 1 {
		t.Fatalf("got %d catalogs, want 1", len(cats))
	}
	c := cats[0]
	if len(c.Prompts) != 7 || len(c.Resources) != 7 || len(c.Templates) != 7 {
		t.Fatalf("got %d prompts, %d resources, %d templates; want 7 of each across four pages", len(c.Prompts), len(c.Resources), len(c.Templates))
	}
	if c.Instructions != "Ask for page seven." || c.Capabilities.Prompts == nil || !c.Capabilities.Resources.Subscribe {
		t.Errorf("got instructions %q and capabilities %+v, want the server's", c.Instructions, c.Capabilities)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := m.GetPrompt(ctx, "paged", "p6", nil)
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Content.(mcp.TextContent).Text != "prompt 6" {
		t.Errorf("GetPrompt p6: got %+v, %v; want prompt 6", got, err)
	}
	read, err := m.ReadResource(ctx, "paged", "paged://r/5")
	if err != nil || len(read.Contents) != 1 || read.Contents[0].(mcp.TextResourceContents).Text != "resource 5" {
		t.Errorf("ReadResource paged://r/5: got %+v, %v; want resource 5", read, err)
	}
	if _, err := m.GetPrompt(ctx, "paged", "nope", nil); err == nil {
		t.Error("GetPrompt of an unknown prompt: got no error, want the upstream's")
	}

	<-changes // the one from connecting
	s.DeletePrompts("p0")
	select {
	case c := <-changes:
		if len(c.Prompts) != 6 || slices.ContainsFunc(c.Prompts, func(p mcp.Prompt) bool { return p.Name == "p0" }) {
			t.Errorf("after list_changed: got %d prompts, want the 6 left", len(c.Prompts))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no OnCatalogChanged within 10s of the server's prompts/list_changed")
	}
}
