package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestTSClientRelay drives mcproxy (the binary, direct mode) with the
// official TypeScript SDK client, server-everything behind it over stdio:
// a long-running tool's progress reaches the client under its own token,
// and the upstream's sampling and elicitation requests are answered by the
// client; a client that declared no sampling gets its upstream a clear
// error.
func TestTSClientRelay(t *testing.T) {
	base := serveEverything(t)
	in, _ := json.Marshal(map[string]string{"url": base + "/mcp"})
	raw := testenv.NodeScript(t, filepath.Join("testdata", "relay_client.mjs"), strings.NewReader(string(in)))
	var out struct {
		Errors             []string
		Progress           []struct{ Progress, Total float64 }
		LongText           string
		SamplingPrompt     string
		SamplingText       string
		ElicitationMessage string
		ElicitationText    string
		BareSampling       struct {
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decoding the client's report %q: %v", raw, err)
	}
	if len(out.Errors) > 0 {
		t.Errorf("the TS client reported errors (an unknown progress token would be one): %q", out.Errors)
	}
	if len(out.Progress) != 3 {
		t.Errorf("progress notifications under the client's token: got %v, want 3 steps", out.Progress)
	}
	for i, p := range out.Progress {
		if p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress %d = %v/%v, want %d/3", i, p.Progress, p.Total, i+1)
		}
	}
	if !strings.Contains(out.LongText, "completed") {
		t.Errorf("long-running operation: got %q", out.LongText)
	}
	if !strings.Contains(out.SamplingPrompt, "say hi") || !strings.Contains(out.SamplingText, "the TS client's model answers") {
		t.Errorf("sampling: the client was asked %q and the tool answered %q", out.SamplingPrompt, out.SamplingText)
	}
	if out.ElicitationMessage == "" || !strings.Contains(out.ElicitationText, "Ada Lovelace") {
		t.Errorf("elicitation: the client was asked %q and the tool answered %q", out.ElicitationMessage, out.ElicitationText)
	}
	if !out.BareSampling.IsError || !strings.Contains(out.BareSampling.Text, `declared no "sampling" capability`) {
		t.Errorf("sampling for a client without the capability: got %+v, want an error naming the capability", out.BareSampling)
	}
}

// serveEverything serves mcproxy over HTTP in direct mode, noa off, with
// server-everything behind it over stdio, and returns its base URL.
func serveEverything(t *testing.T) string {
	t.Helper()
	base, _ := serveHTTP(t, everythingConfig(t))
	return base
}

// everythingConfig writes serveEverything's config: server-everything
// over stdio, direct mode, noa off.
func everythingConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"mode":         "direct",
		"init_timeout": "60s",
		"noa":          map[string]any{"enabled": false},
	})
}
