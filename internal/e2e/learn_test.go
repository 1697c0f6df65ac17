package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// learnStep is one answer learn.mjs saw.
type learnStep struct {
	IsError bool   `json:"isError"`
	Text    string `json:"text"`
}

// learnSession plays steps in a new TypeScript SDK client session.
func learnSession(t *testing.T, url string, steps ...map[string]any) []learnStep {
	t.Helper()
	arg, _ := json.Marshal(map[string]any{"url": url, "steps": steps})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "learn.mjs"), string(arg)).Output()
	if err != nil {
		t.Fatalf("learn.mjs (TypeScript SDK client): %v\n%s", err, out)
	}
	var got []learnStep
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("learn.mjs printed %q: %v", out, err)
	}
	return got
}

// toolIDs matches the tool ids of a retrieve_tools answer, in order.
var toolIDs = regexp.MustCompile(`\b(memory|filesystem):[a-z_]+\b`)

// firstTool is the first tool id a retrieve_tools answer lists.
func firstTool(answer string) string { return toolIDs.FindString(answer) }

// TestLearningFromUseEndToEnd runs the real binary with the memory and
// filesystem reference servers and drives it with the TypeScript SDK
// client: a session's search in words no tool uses misses, a second search
// in the tool's words finds it, and the call succeeds; a new session's
// later phrasing of the same need then finds the tool first. After
// `mcproxy learned forget` (with the proxy still running) it does not.
func TestLearningFromUseEndToEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.writeConfig(t, "learn.json", map[string]any{"mcpServers": map[string]any{
		"memory": f.cfg["mcpServers"].(map[string]any)["memory"], "filesystem": f.cfg["mcpServers"].(map[string]any)["filesystem"]}})
	base, p := serveHTTP(t, cfg)
	url := base + "/mcp"
	const want = "memory:create_entities"
	const later = "keep in mind that Bob's birthday is in May"

	before := learnSession(t, url, map[string]any{"search": later})
	if got := firstTool(before[0].Text); got == want {
		t.Fatalf("the later phrasing already finds %s first before anything was learned; the test proves nothing:\n%s", want, before[0].Text)
	}

	taught := learnSession(t, url,
		map[string]any{"search": "keep in mind that Alice prefers tea"},
		map[string]any{"search": "create entities in the knowledge graph"},
		map[string]any{"call": want, "arguments": map[string]any{"entities": []any{
			map[string]any{"name": "Alice", "entityType": "person", "observations": []any{"prefers tea"}}}}},
	)
	if strings.Contains(taught[0].Text, want+"(") || firstTool(taught[0].Text) == want {
		t.Fatalf("the first phrasing already finds %s; the test proves nothing:\n%s", want, taught[0].Text)
	}
	if !strings.Contains(taught[1].Text, want) || taught[2].IsError {
		t.Fatalf("the second search or the call failed:\n%s\n%s", taught[1].Text, taught[2].Text)
	}

	after := learnSession(t, url, map[string]any{"search": later})
	if got := firstTool(after[0].Text); got != want {
		t.Errorf("after learning, the later phrasing finds %q first, want %s:\n%s\n%s", got, want, after[0].Text, p.output())
	}
	code, out, errOut := runBinary(t, 30*time.Second, "learned", "list", want, "--config", cfg)
	if code != 0 || !strings.Contains(out, "keep") {
		t.Errorf("mcproxy learned list: exit %d\n%s%s", code, out, errOut)
	}

	if code, out, errOut := runBinary(t, 30*time.Second, "learned", "forget", want, "--config", cfg); code != 0 {
		t.Fatalf("mcproxy learned forget: exit %d\n%s%s", code, out, errOut)
	}
	forgot := learnSession(t, url, map[string]any{"search": later})
	if got := firstTool(forgot[0].Text); got == want {
		t.Errorf("after forget, the later phrasing still finds %s first:\n%s", want, forgot[0].Text)
	}
}
