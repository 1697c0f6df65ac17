package server

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

func TestUnionCapabilities(t *testing.T) {
	prompts := mcp.ServerCapabilities{Prompts: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
	subscribable := mcp.ServerCapabilities{Resources: &struct {
		Subscribe   bool `json:"subscribe,omitempty"`
		ListChanged bool `json:"listChanged,omitempty"`
	}{Subscribe: true}, Completions: &struct{}{}}
	plain := mcp.ServerCapabilities{Resources: &struct {
		Subscribe   bool `json:"subscribe,omitempty"`
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}

	if got := unionCapabilities([]*upstream.Catalog{{Server: "tools-only"}}); got.Prompts != nil || got.Resources != nil || got.Completions != nil {
		t.Errorf("tools-only upstream: got %+v, want no prompts, resources or completions advertised", got)
	}
	got := unionCapabilities([]*upstream.Catalog{{Capabilities: prompts}, {Capabilities: subscribable}, {Capabilities: plain}})
	if got.Prompts == nil || !got.Prompts.ListChanged {
		t.Errorf("prompts: got %+v, want advertised with listChanged", got.Prompts)
	}
	if got.Resources == nil || !got.Resources.Subscribe || !got.Resources.ListChanged {
		t.Errorf("resources: got %+v, want subscribe (one upstream has it) and listChanged", got.Resources)
	}
	if got.Completions == nil {
		t.Error("completions: got none, want advertised (one upstream has it)")
	}
}

func TestUpstreamInstructions(t *testing.T) {
	got := upstreamInstructions([]*upstream.Catalog{
		{Server: "a", Instructions: "  Use a for apples.\n"},
		{Server: "b"},
		{Server: "c", Instructions: "C first."},
	})
	want := "Instructions from the servers behind mcproxy, each under its server name:\n\n## a\nUse a for apples.\n\n## c\nC first."
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if got := upstreamInstructions([]*upstream.Catalog{{Server: "b"}}); got != "" {
		t.Errorf("no instructions: got %q, want none", got)
	}
}

// TestDirectPrefixCannotTakeMcproxysTools serves an upstream with prefix ""
// and a tool named Compress, the name of noa's own tool: mcproxy's stays,
// the upstream's is withheld and the log says so.
func TestDirectPrefixCannotTakeMcproxysTools(t *testing.T) {
	m := session.NewManager(session.Options{Dir: t.TempDir(), Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
	srv := newUpstreamServer()
	srv.AddTool(mcp.NewTool("Compress", mcp.WithDescription("The upstream's own Compress.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("upstream compress"), nil
		})
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"up": srv})
	core, logs := observer.New(zap.WarnLevel)
	s, err := New(Deps{Upstreams: up, Sessions: m, Logger: zap.New(core)},
		Options{Mode: config.ModeDirect, Prefix: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	f := serveFront(t, s, mcptransport.HTTPOptions{})
	c := connect(t, f, "streamable", nil)
	names := toolNames(t, c)
	if !slices.Contains(names, "echo") || !slices.Contains(names, "Compress") {
		t.Fatalf("tools/list: got %v, want the upstream's echo under its own name beside noa's Compress", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "Compress" && strings.Contains(tl.Description, "upstream's own") {
			t.Errorf("Compress: got the upstream's definition, want mcproxy's")
		}
	}
	if logs.FilterMessageSnippet(`tool "Compress" of server "up" collides`).Len() == 0 {
		t.Errorf("no collision logged for the upstream's Compress; got %v", logs.All())
	}
}
