package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Files written as Claude Desktop's and Cline's documentation show them
// load as they are, with a note for each key mcproxy ignores (issue 18).
func TestLoadOtherClientsFiles(t *testing.T) {
	tests := []struct {
		file      string
		enabled   map[string]bool
		wantNotes []string
	}{
		{
			file:      "claude_desktop_config.json",
			enabled:   map[string]bool{"filesystem": true, "memory": true},
			wantNotes: []string{"globalShortcut: another client's setting, ignored"},
		},
		{
			file:    "cline_mcp_settings.json",
			enabled: map[string]bool{"github": true, "weather": false},
			wantNotes: []string{
				"mcpServers.github.autoApprove: " + serverKeyNote["autoApprove"],
				"mcpServers.github.timeout: " + serverKeyNote["timeout"],
				"mcpServers.github.transportType: " + serverKeyNote["transportType"],
				"mcpServers.weather.alwaysAllow: " + serverKeyNote["alwaysAllow"],
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			cfg, notes, err := ParseWithNotes(data, nil)
			if err != nil {
				t.Fatalf("got %v, want the file accepted", err)
			}
			if diff := cmp.Diff(tc.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			got := map[string]bool{}
			for name, sc := range cfg.MCPServers {
				got[name] = sc.IsEnabled()
			}
			if diff := cmp.Diff(tc.enabled, got); diff != "" {
				t.Errorf("enabled servers (-want +got):\n%s", diff)
			}
		})
	}
}
