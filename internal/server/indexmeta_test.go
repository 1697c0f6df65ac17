package server

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
)

// The index ingests what the upstream sends beyond name, description and
// schema: a tool found only by its title (Tool.title, or annotations.title
// when there is none) ranks first for it.
func TestIndexIngestsUpstreamTitles(t *testing.T) {
	up := mcpserver.NewMCPServer("titled", "1")
	noop := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	up.AddTool(mcp.NewTool("qr1", mcp.WithDescription("Runs the job."), mcp.WithToolTitle("Quarterly revenue report")), noop)
	up.AddTool(mcp.NewTool("wx2", mcp.WithDescription("Runs the job."), mcp.WithTitleAnnotation("Weather forecast lookup")), noop)
	up.AddTool(mcp.NewTool("other", mcp.WithDescription("Runs the job.")), noop)
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rank, err := retrieval.New(ix, nil, retrieval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rank.Close() })
	s, err := New(Deps{Upstreams: newTestUpstreams(t, map[string]*mcpserver.MCPServer{"t": up}), Index: rank},
		Options{IndexMetadata: arms.BaselineMetadata})
	if err != nil {
		t.Fatal(err)
	}
	s.Resync()
	for query, want := range map[string]string{"quarterly revenue": "t:qr1", "weather forecast": "t:wx2"} {
		got, err := s.Retrieve(context.Background(), query, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[0].Tool.ID != want {
			t.Errorf("Retrieve(%q): got %v, want %s first", query, got, want)
		}
	}
}
