package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// allowed_tools and disabled_tools take "tool" and "server:tool" alike
// (issue 18); another server's name is kept, to be warned about.
func TestServerPrefixedToolNames(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"memory": {"command": "x",
		"allowed_tools": ["read_graph", "memory:search_nodes", "github:create_issue"],
		"disabled_tools": ["memory:delete_entities"]}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.MCPServers["memory"]
	if diff := cmp.Diff([]string{"read_graph", "search_nodes", "github:create_issue"}, m.AllowedTools); diff != "" {
		t.Errorf("allowed_tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"delete_entities"}, m.DisabledTools); diff != "" {
		t.Errorf("disabled_tools (-want +got):\n%s", diff)
	}
	if !m.ToolAllowed("search_nodes") || m.ToolAllowed("delete_entities") {
		t.Error("the server:tool entries do not filter as their plain names")
	}
}
