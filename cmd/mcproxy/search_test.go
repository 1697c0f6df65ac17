package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/upstream"
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

// A retry that fell due while search waited for slower servers reads
// "now", and one due within the second "in 1s" (issue 30: "retry in -1s").
func TestPrintBrokenRetry(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		retryAt time.Time
		want    string
	}{
		{now.Add(-1200 * time.Millisecond), "(mcproxy serve would retry now)"},
		{now.Add(300 * time.Millisecond), "(mcproxy serve would retry in 1s)"},
		{now.Add(4 * time.Second), "(mcproxy serve would retry in 4s)"},
	} {
		var b strings.Builder
		printBroken(&b, []upstream.Status{{Server: "broken", Transport: "stdio", State: upstream.StateDown, LastError: "exec: not found", RetryAt: tc.retryAt}}, now)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("retry at now%+v: got %q, want %q", tc.retryAt.Sub(now), b.String(), tc.want)
		}
	}
}

// A misconfigured server, whose transport is in doubt, is named without
// an empty "()".
func TestPrintBrokenMisconfigured(t *testing.T) {
	var b strings.Builder
	printBroken(&b, []upstream.Status{{Server: "ctx7", State: upstream.StateMisconfigured, LastError: "mcpServers.ctx7.url: is blank"}}, time.Now())
	if want := "  ctx7: misconfigured: mcpServers.ctx7.url: is blank\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("got %q, want it to end with %q", b.String(), want)
	}
}
