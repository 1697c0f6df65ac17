package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestWarmStartPromptsAndResources is issue 29's one-shot stdio client (the
// MCP Inspector's --cli mode) after a warm start: server-everything takes
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
}
