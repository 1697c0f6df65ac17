package importer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Launchers finds the entries that launch mcproxy, with their config, under
// either dialect's key, in a file with comments; the other entries are
// counted.
func TestLaunchers(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []Launcher
		others     int
	}{
		{"setup's entry", `{"mcpServers": {"mcproxy": {"command": "/bin/mcproxy", "args": ["serve", "--stdio", "--config", "/c.json"]}, "git": {"command": "git-mcp"}}}`,
			[]Launcher{{Name: "mcproxy", Command: "/bin/mcproxy", Config: "/c.json"}}, 1},
		{"VS Code, with comments", "{\n// mine\n\"servers\": {\"m\": {\"type\": \"stdio\", \"command\": \"mcproxy\", \"args\": [\"serve\"]},}}",
			[]Launcher{{Name: "m", Command: "mcproxy"}}, 0},
		{"no mcproxy", `{"mcpServers": {"git": {"command": "git-mcp", "timeout": 60}}, "numStartups": 3}`, nil, 1},
		{"no servers", `{"numStartups": 3}`, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, others, err := Launchers([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || others != tc.others {
				t.Errorf("got others %d, want %d; launchers (-want +got):\n%s", others, tc.others, diff)
			}
		})
	}
	if _, _, err := Launchers([]byte(`[1]`)); err == nil {
		t.Errorf("a file that is not an object: got no error")
	}
}
