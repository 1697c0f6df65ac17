package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// A front over a shared index (a profile's view, issue 31) ranks its tools
// as the full index does, taking the limit after the restriction, and
// never writes the index the default front keeps.
func TestSharedIndexRestrictsAfterRanking(t *testing.T) {
	t.Parallel()
	noop := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	big := mcpserver.NewMCPServer("big", "1")
	for i := range 30 {
		big.AddTool(mcp.NewTool(fmt.Sprintf("read_file_%02d", i), mcp.WithDescription("Read a file from disk.")), noop)
	}
	few := mcpserver.NewMCPServer("big", "1") // the same server as a profile sees it: two of its tools
	for i := range 2 {
		few.AddTool(mcp.NewTool(fmt.Sprintf("read_file_%02d", i), mcp.WithDescription("Read a file from disk.")), noop)
	}
	small := mcpserver.NewMCPServer("small", "1")
	small.AddTool(mcp.NewTool("read_note", mcp.WithDescription("Read a note file.")), noop)

	ix := newWordIndex()
	full, err := New(Deps{Upstreams: newTestUpstreams(t, map[string]*mcpserver.MCPServer{"big": big, "small": small}), Index: ix}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	full.Resync()
	view, err := New(Deps{Upstreams: newTestUpstreams(t, map[string]*mcpserver.MCPServer{"big": few, "small": small}), Index: ix}, Options{SharedIndex: true})
	if err != nil {
		t.Fatal(err)
	}
	view.Resync()

	// Every tool ties on "read file"; small:read_note ranks 31st, past
	// the depth one search would ask for.
	got, err := view.Retrieve(context.Background(), "read file", 5)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.Tool.ID)
	}
	want := []string{"big:read_file_00", "big:read_file_01", "small:read_note"}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("the view's Retrieve = %v, want %v", ids, want)
	}
	all, err := full.Retrieve(context.Background(), "read file", 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 31 {
		t.Errorf("the full front's Retrieve found %d tools after the view synced, want 31: the view wrote the shared index", len(all))
	}
}
