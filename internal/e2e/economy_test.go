package e2e

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/passthrough"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// Issue 17's budgets, as a model reads them through the real binary with
// default settings (noa on).
const (
	menuBudget       = 800 // tools/list + initialize instructions
	laterNudgeBudget = 250
)

// TestTokenEconomyFromTypeScriptSDK counts, with cl100k, what a model reads
// of a session driven by the official TypeScript SDK client over stdio:
// the menu (every tool as tools/list returns it, rendered like the
// profiler's baseline, plus the instructions) and the nudges. The first
// nudge carries the compression rules; a later one points back to them and
// stays within budget.
func TestTokenEconomyFromTypeScriptSDK(t *testing.T) {
	fx := newNoaFixture(t)
	arg, err := json.Marshal(map[string]any{
		"command": binary, "args": []string{"serve", "--stdio", "--config", fx.config},
		"fsDir": fx.fsDir, "maxCalls": 80,
	})
	if err != nil {
		t.Fatal(err)
	}
	stdout := testenv.NodeScript(t, filepath.Join("testdata", "economy.mjs"), bytes.NewReader(arg))
	var seen struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		Instructions string `json:"instructions"`
		RefTag       string `json:"refTag"`
		Nudges       []struct {
			Call int    `json:"call"`
			Text string `json:"text"`
		} `json:"nudges"`
		Calls int `json:"calls"`
	}
	if err := json.Unmarshal(stdout, &seen); err != nil {
		t.Fatalf("economy.mjs output: %v\n%s", err, stdout)
	}
	tk, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}

	menu := make([]config.Tool, 0, len(seen.Tools))
	var names []string
	for _, tl := range seen.Tools {
		menu = append(menu, config.Tool{Name: tl.Name, Description: tl.Description, Schema: tl.InputSchema})
		names = append(names, tl.Name)
	}
	if got, want := strings.Join(sorted(names), ","), "Compress,call_tool,describe_tool,read_archive,retrieve_tools"; got != want {
		t.Fatalf("tools/list: got %s, want %s", got, want)
	}
	listing, err := arms.NewBaseline().EncodeListing(menu)
	if err != nil {
		t.Fatal(err)
	}
	// The upstreams' own instructions are passed on after mcproxy's
	// (server-everything has some); a client connected to it directly
	// reads them too, so they are not mcproxy's cost.
	own, passed, _ := strings.Cut(seen.Instructions, passthrough.UpstreamInstructionsHeader)
	t.Logf("instructions passed on from the upstreams: %d tokens", tk.Count(passed))
	toolTokens, instrTokens := tk.Count(listing), tk.Count(strings.TrimSpace(own))
	t.Logf("menu: %d tokens (tools %d + instructions %d)", toolTokens+instrTokens, toolTokens, instrTokens)
	if toolTokens+instrTokens > menuBudget {
		t.Errorf("menu: got %d tokens (tools %d + instructions %d), want at most %d", toolTokens+instrTokens, toolTokens, instrTokens, menuBudget)
	}
	if n := tk.Count(seen.RefTag); n == 0 || n > 15 {
		t.Errorf("ref tag %q: got %d tokens, want a few", seen.RefTag, n)
	}

	if len(seen.Nudges) < 2 {
		t.Fatalf("got %d nudges in %d calls, want 2", len(seen.Nudges), seen.Calls)
	}
	first, later := seen.Nudges[0], seen.Nudges[1]
	t.Logf("first nudge (call %d): %d tokens; later nudge (call %d): %d tokens:\n%s", first.Call, tk.Count(first.Text), later.Call, tk.Count(later.Text), later.Text)
	if !strings.Contains(first.Text, "HOW TO COMPRESS") {
		t.Errorf("first nudge lacks the compression rules:\n%s", first.Text)
	}
	if strings.Contains(later.Text, "COPY EXACTLY") || !strings.Contains(later.Text, "HOW TO COMPRESS, sent with the noa note after m") {
		t.Errorf("later nudge: want the rules left out and a pointer back to them, got:\n%s", later.Text)
	}
	if len(rangesOf(later.Text)) == 0 {
		t.Errorf("later nudge names no range to compress:\n%s", later.Text)
	}
	if n := tk.Count(later.Text); n > laterNudgeBudget {
		t.Errorf("later nudge: got %d tokens, want at most %d:\n%s", n, laterNudgeBudget, later.Text)
	}
}
