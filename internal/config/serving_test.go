package config

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseServing: a problem inside one server's entry sets that server
// aside and the others load (issue 30); a problem with mcproxy's own keys
// refuses the file, naming every problem.
func TestParseServing(t *testing.T) {
	env := testEnv(map[string]string{"HOME": "/home/u"})
	for _, tc := range []struct {
		name   string
		in     string
		broken map[string]string // want Config.Broken
		left   []string          // want MCPServers' names
		refuse []string          // want Parse's error to hold each
	}{{
		name: "unset variable",
		in: `{"mcpServers": {
			"ok":   {"command": "a", "args": ["${HOME}"]},
			"ctx7": {"url": "https://c/mcp", "headers": {"Authorization": "Bearer ${CTX7_KEY}"}}}}`,
		broken: map[string]string{"ctx7": "mcpServers.ctx7.headers.Authorization: ${CTX7_KEY} is not set: export CTX7_KEY, or give a default with ${CTX7_KEY:-value}"},
		left:   []string{"ok"},
	}, {
		name: "bad field and bad value",
		in: `{"mcpServers": {
			"ok":  {"command": "a"},
			"git": {"comand": "git"},
			"web": {"url": "ftp://x", "init_timeout": "soon"}}}`,
		broken: map[string]string{
			"git": `mcpServers.git.comand: unknown key (did you mean "command"?)`,
			"web": `mcpServers.web.init_timeout: invalid duration "soon": want a number with a unit such as "500ms", "30s", "2m" or "1h30m"`,
		},
		left: []string{"ok"},
	}, {
		name: "validation",
		in: `{"mcpServers": {
			"ok":  {"command": "a"},
			"both": {"command": "a", "url": "http://h"},
			"a.b": {"command": "a"}}}`,
		broken: map[string]string{
			"both": "mcpServers.both: set either command (a stdio server to launch) or url (an HTTP server to reach), not both",
			"a.b":  `mcpServers.a.b: invalid server name "a.b": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
		},
		left: []string{"ok"},
	}, {
		name: "prefix shared with another server",
		in:   `{"mcpServers": {"a": {"command": "a", "prefix": "x_"}, "b": {"command": "b", "prefix": "x_"}}}`,
		broken: map[string]string{
			"b": `mcpServers.b.prefix: "x_" is also the prefix of server "a": the names of "a" and "b" would collide; give one of them another prefix`,
		},
		left: []string{"a"},
	}, {
		name:   "own key while decoding",
		in:     `{"mcpServers": {"git": {"comand": "git"}}, "listen": 8765}`,
		refuse: []string{"listen: want a string", `mcpServers.git.comand: unknown key`},
	}, {
		name:   "own key while validating",
		in:     `{"mcpServers": {"ctx7": {"command": "${CTX7_KEY}"}, "both": {"command": "a", "url": "http://h"}}, "mode": "all"}`,
		refuse: []string{`mode: "all" is not a mode`, "mcpServers.ctx7.command: ${CTX7_KEY} is not set", "mcpServers.both: set either"},
	}, {
		name:   "the map itself",
		in:     `{"mcpServers": []}`,
		refuse: []string{"mcpServers: want an object"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _, err := ParseServing([]byte(tc.in), env)
			if tc.refuse != nil {
				if err == nil {
					t.Fatalf("got no error, want one holding %q", tc.refuse)
				}
				for _, want := range tc.refuse {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("got error %q, want it to hold %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want the bad servers set aside", err)
			}
			if diff := cmp.Diff(tc.broken, cfg.Broken); diff != "" {
				t.Errorf("Broken (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.left, slices.Sorted(maps.Keys(cfg.MCPServers))); diff != "" {
				t.Errorf("MCPServers (-want +got):\n%s", diff)
			}
			// The strict parse still refuses what ParseServing set aside.
			if _, err := Parse([]byte(tc.in), env); err == nil {
				t.Error("Parse took the file; want the servers' problems refused")
			}
		})
	}
}
