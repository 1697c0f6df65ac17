package passthrough

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

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
