package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestWarmStartPromptsAndResources is issue 29's one-shot stdio client (the
// MCP Inspector's --cli mode, itself and the TypeScript SDK client) after a
// warm start: server-everything takes
// two seconds to start, the warm file lets initialize answer at once, and
// the client's first prompts/get, resources/read and completion/complete
// wait for the server as a tool call does, instead of getting "not found",
// while a prompt no server has is still refused as not found
// (testdata/oneshot.mjs, the TypeScript SDK client).
func TestWarmStartPromptsAndResources(t *testing.T) {
	t.Parallel()
	needNode(t)
	dir := t.TempDir()
	script := "sleep 2; exec \"$0\" \"$@\""
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": "/bin/sh", "args": []string{"-c", script, testenv.NodeBin(t, "mcp-server-everything")}},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
		"log_level":    "warn",
	})

	// The first run saves the server's tool list for the next start.
	c, _, stop := serveStdio(t, config)
	retrieveUntil(t, c, "echo a message", "everything:echo")
	stop()

	arg, err := json.Marshal(map[string]any{
		"command":  binary,
		"args":     []string{"serve", "--stdio", "--config", config},
		"prompt":   "everything__simple-prompt",
		"uri":      "demo://resource/static/document/architecture.md",
		"complete": "everything__completable-prompt",
		"missing":  "everything__no-such-prompt",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "oneshot.mjs"), string(arg)).CombinedOutput()
	if err != nil {
		t.Fatalf("oneshot.mjs (TypeScript SDK client, right after a warm start): %v\n%s", err, out)
	}
	t.Logf("oneshot.mjs:\n%s", out)

	// The MCP Inspector's own CLI (npm @modelcontextprotocol/inspector-cli,
	// the v1 line), one process a request as a user runs it, each starting a
	// new mcproxy from the warm file: the first try succeeds.
	inspector := filepath.Join(testenv.NodePackage(t, "@modelcontextprotocol/inspector-cli", "1.0.3"), "build", "cli.js")
	// The CLI finds its package.json at "../package.json" relative to its
	// working directory, not to itself; give it a directory where that
	// exists (its contents are not read: the import is the module's own).
	cwd := filepath.Join(dir, "inspector", "run")
	if err := os.MkdirAll(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inspector", "package.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		args   []string
		want   string
	}{
		{"prompts/get", []string{"--prompt-name", "everything__simple-prompt"}, `"messages"`},
		{"resources/read", []string{"--uri", "demo://resource/static/document/architecture.md"}, `"uri": "demo://resource/static/document/architecture.md"`},
	} {
		// After "--": the launcher would take mcproxy's --config as its own.
		cmd := exec.CommandContext(ctx, testenv.Node(t), append([]string{inspector, "--cli", "--", binary, "serve", "--stdio", "--config", config, "--method", tc.method}, tc.args...)...)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("the Inspector CLI's %s right after a warm start: %v\n%s\nwant output holding %s", tc.method, err, out, tc.want)
		}
	}
}
