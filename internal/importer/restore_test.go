package importer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestRestore covers what setup --undo meets besides a rewrite of an
// existing file (cmd/mcproxy's TestSetupUndoKeepsTheClientsChanges).
func TestRestore(t *testing.T) {
	entry := config.ServerConfig{Command: "/opt/mcproxy", Args: []string{"serve", "--stdio"}}
	for _, tc := range []struct {
		name        string
		before      string
		edit        func(setup []byte) []byte // what the client did since; nil = nothing
		want        string                    // "" = remove the file
		kept, added []string
	}{{
		name:   "no file before, nothing since",
		before: "",
	}, {
		name:   "no file before, the client wrote its own keys since",
		before: "",
		edit: func([]byte) []byte {
			return []byte(`{"numStartups": 3, "mcpServers": {"mcproxy": {"command": "/opt/mcproxy"}, "new": {"command": "n"}}}`)
		},
		want:  "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"new\": {\n      \"command\": \"n\"\n    }\n  }\n}\n",
		kept:  []string{"numStartups"},
		added: []string{"new"},
	}, {
		name:   "before had an mcproxy entry of its own",
		before: `{"mcpServers": {"mcproxy": {"url": "http://127.0.0.1:8765/mcp"}, "a": {"command": "a"}}, "x": 1}`,
		edit: func([]byte) []byte {
			return []byte(`{"x": 2, "mcpServers": {"mcproxy": {"command": "/opt/mcproxy"}}}`)
		},
		want: "{\n  \"x\": 2,\n  \"mcpServers\": {\n    \"mcproxy\": {\n      \"url\": \"http://127.0.0.1:8765/mcp\"\n    },\n    \"a\": {\n      \"command\": \"a\"\n    }\n  }\n}\n",
		kept: []string{"x"},
	}, {
		name:   "the client removed its file",
		before: "// mine\n{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}\n",
		edit:   func([]byte) []byte { return nil },
		want:   "// mine\n{\"mcpServers\": {\"a\": {\"command\": \"a\"}}}\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			now, err := PointAt([]byte(tc.before), entry)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				now = tc.edit(now)
			}
			r, err := Restore([]byte(tc.before), now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && r.Data != nil {
				t.Errorf("got\n%s\nwant the file removed", r.Data)
			}
			if tc.want != "" && string(r.Data) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", r.Data, tc.want)
			}
			if diff := cmp.Diff(tc.kept, r.Kept); diff != "" {
				t.Errorf("Kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.added, r.Added); diff != "" {
				t.Errorf("Added (-want +got):\n%s", diff)
			}
		})
	}
}
