package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/testenv/golden"
)

// TestMetaToolsGolden pins the model-facing definitions of the meta tools
// (tools/list in retrieve mode): every wording change shows up in review.
// Regenerate with: go test ./internal/server -run MetaToolsGolden -update
func TestMetaToolsGolden(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, &front{Server: s}, "inprocess", nil)
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "meta_tools.golden.json"), append(got, '\n'))
}
