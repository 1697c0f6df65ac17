package profile

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func b(v bool) *bool { return &v }

func TestMatcher(t *testing.T) {
	ro := mcp.ToolAnnotation{ReadOnlyHint: b(true)}
	rw := mcp.ToolAnnotation{ReadOnlyHint: b(false)}
	rwSafe := mcp.ToolAnnotation{ReadOnlyHint: b(false), DestructiveHint: b(false)}
	none := mcp.ToolAnnotation{}
	type call struct {
		server, tool string
		ann          mcp.ToolAnnotation
		want         bool
	}
	cases := []struct {
		name    string
		p       *config.ProfileConfig // nil: the default profile
		tools   []call
		servers map[string]bool
	}{
		{
			name:    "default includes everything",
			tools:   []call{{"github", "delete_repo", rw, true}, {"memory", "read", none, true}},
			servers: map[string]bool{"github": true, "any": true},
		},
		{
			name:    "whole server",
			p:       &config.ProfileConfig{Servers: []string{"memory"}},
			tools:   []call{{"memory", "anything", none, true}, {"github", "get_issue", ro, false}, {"memory2", "x", none, false}},
			servers: map[string]bool{"memory": true, "github": false},
		},
		{
			name: "tool globs",
			p:    &config.ProfileConfig{Tools: []string{"github:get_*", "everything:echo"}},
			tools: []call{
				{"github", "get_issue", none, true}, {"github", "get_", none, true}, {"github", "create_issue", none, false},
				{"everything", "echo", none, true}, {"everything", "echo2", none, false}, {"other", "get_x", none, false},
			},
			servers: map[string]bool{"github": true, "everything": true, "other": false},
		},
		{
			name:    "servers and tools together",
			p:       &config.ProfileConfig{Servers: []string{"memory"}, Tools: []string{"github:list_*"}},
			tools:   []call{{"memory", "x", none, true}, {"github", "list_prs", none, true}, {"github", "merge", none, false}},
			servers: map[string]bool{"memory": true, "github": true, "fs": false},
		},
		{
			name: "annotations alone select from every server",
			p:    &config.ProfileConfig{Annotations: []string{"readOnlyHint"}},
			tools: []call{
				{"github", "get_issue", ro, true}, {"fs", "read", ro, true},
				{"github", "merge", rw, false}, {"fs", "undeclared", none, false},
			},
			servers: map[string]bool{"github": true, "fs": true},
		},
		{
			name:  "annotations narrow the servers",
			p:     &config.ProfileConfig{Servers: []string{"github"}, Annotations: []string{"readOnlyHint"}},
			tools: []call{{"github", "get", ro, true}, {"github", "merge", rw, false}, {"fs", "read", ro, false}},
		},
		{
			name: "negated hint follows the MCP defaults",
			p:    &config.ProfileConfig{Servers: []string{"s"}, Annotations: []string{"!destructiveHint"}},
			tools: []call{
				{"s", "read", ro, true},           // read-only is never destructive
				{"s", "safe_write", rwSafe, true}, // declared non-destructive
				{"s", "write", rw, false},         // absent destructiveHint defaults to true
				{"s", "undeclared", none, false},
			},
		},
		{
			name:  "openWorldHint absent is true",
			p:     &config.ProfileConfig{Servers: []string{"s"}, Annotations: []string{"!openWorldHint"}},
			tools: []call{{"s", "a", none, false}, {"s", "b", mcp.ToolAnnotation{OpenWorldHint: b(false)}, true}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m *Matcher
			if c.p != nil {
				m = New("p", *c.p)
			}
			for _, tc := range c.tools {
				if got := m.Tool(tc.server, tc.tool, tc.ann); got != tc.want {
					t.Errorf("Tool(%s:%s, %+v) = %v, want %v", tc.server, tc.tool, tc.ann, got, tc.want)
				}
			}
			for s, want := range c.servers {
				if got := m.Server(s); got != want {
					t.Errorf("Server(%s) = %v, want %v", s, got, want)
				}
			}
		})
	}
}

func TestMatcherZero(t *testing.T) {
	var nilM *Matcher
	if !nilM.Everything() || nilM.Name() != "" {
		t.Error("a nil matcher is not the default profile")
	}
	m := New("review", config.ProfileConfig{Tools: []string{"github:get_*"}})
	if m.Everything() || m.Name() != "review" {
		t.Errorf("Everything() = %v, Name() = %q", m.Everything(), m.Name())
	}
}
