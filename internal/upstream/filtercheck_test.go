package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnmatchedToolNames(t *testing.T) {
	tools := []string{"read_graph", "search_nodes", "create_entities"}
	got := UnmatchedToolNames("memory", []string{"read_graf", "search_nodes", "github:create_issue", "zzz"}, []string{"create_entitis"}, tools)
	want := []string{
		`mcpServers.memory.allowed_tools: "read_graf" matches no tool of memory (did you mean "read_graph"?)`,
		`mcpServers.memory.allowed_tools: "github:create_issue" matches no tool of memory (it names server "github"; list it under that server)`,
		`mcpServers.memory.allowed_tools: "zzz" matches no tool of memory`,
		`mcpServers.memory.disabled_tools: "create_entitis" matches no tool of memory (did you mean "create_entities"?)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := UnmatchedToolNames("memory", []string{"read_graph"}, nil, tools); got != nil {
		t.Errorf("all names match: got %v, want none", got)
	}
}
