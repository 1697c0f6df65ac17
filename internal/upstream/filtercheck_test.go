package upstream

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
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

// With no timeout in the file, the init timeout is attributed to the
// default, not to a key the user never wrote (issue 18).
func TestTimeoutNotBlamedOnUnsetKey(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"mcpServers": {"git": {"command": "x"}, "web": {"command": "y", "init_timeout": "5s"}}, "call_timeout": "1m"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(cfg, Options{})
	links, _ := m.roster()
	for _, tc := range []struct {
		got  string
		want string
	}{
		{links["git"].init.setting, "the default init_timeout (set init_timeout or mcpServers.git.init_timeout to change it)"},
		{links["git"].call.setting, "call_timeout"},
		{links["web"].init.setting, "mcpServers.web.init_timeout"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestTidyError(t *testing.T) {
	for in, want := range map[string]string{
		`connecting: failed to send request: failed to send request: Post "http://127.0.0.1:1/mcp": dial tcp 127.0.0.1:1: connect: connection refused`: `connecting: failed to send request: Post "http://127.0.0.1:1/mcp": dial tcp 127.0.0.1:1: connect: connection refused`,
		"a: b: a": "a: b: a",
		"plain":   "plain",
	} {
		if got := tidyError(in); got != want {
			t.Errorf("tidyError(%q): got %q, want %q", in, got, want)
		}
	}
}
