package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// search says which server it is still waiting for while one is slow, and
// exits non-zero when a server is down even though others answered.
func TestSearchProgressAndBrokenServers(t *testing.T) {
	memory := testenv.NodeBin(t, "mcp-server-memory")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	writeJSON(t, cfgPath, map[string]any{
		"data_dir": filepath.Join(dir, "data"),
		"mcpServers": map[string]any{
			"memory": map[string]any{"command": memory, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "m1.jsonl")}},
			// Starts answering after about 3 seconds.
			"slow":   map[string]any{"command": "sh", "args": []string{"-c", `sleep 3; exec "$0"`, memory}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "m2.jsonl")}},
			"broken": map[string]any{"command": filepath.Join(dir, "no-such-server")},
		},
	})
	code, out, errOut := runCLI(t, "search", "search nodes in the knowledge graph", "--config", cfgPath)
	if code != exitError {
		t.Errorf("exit code: got %d, want %d with a server down", code, exitError)
	}
	if !strings.Contains(errOut, "still connecting: slow") {
		t.Errorf("stderr: got %q, want a progress line naming slow", errOut)
	}
	if !strings.Contains(errOut, "1 server(s) not working") {
		t.Errorf("stderr: got %q, want the count of servers not working", errOut)
	}
	for _, want := range []string{"memory:search_nodes", "slow:search_nodes", "broken (stdio): down"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
