package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// claudeCodeVersion is the @anthropic-ai/claude-code pinned in package.json.
const claudeCodeVersion = "2.1.332"

// claudeEnv is the environment Claude Code runs offline in: a home of its
// own, the gateway as its API, a key of no account, and no traffic besides
// the model API (no telemetry, error reports, update checks).
func claudeEnv(home, base string) []string {
	return []string{
		"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(),
		"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_BUG_COMMAND=1",
	}
}

// TestClaudeCodeThroughTheGateway runs Claude Code headless with the real
// mcproxy binary as both its model endpoint and its MCP server, the
// reference filesystem server behind the MCP side, and the scripted model
// (gatewaytest.Agent) behind the gateway. The task reads twenty-four files
// through retrieve_tools and call_tool; the model's window is small (the
// files alone outgrow it), so the conversation passes the nudge threshold
// part way, the model compresses inside the gateway, and the gateway
// forwards fewer bytes in all than Claude Code sends (issue 27).
func TestClaudeCodeThroughTheGateway(t *testing.T) {
	t.Parallel()
	testenv.NodePackage(t, "@anthropic-ai/claude-code", claudeCodeVersion)
	claude := testenv.NodeBin(t, "claude")
	dir := t.TempDir()
	const files = 24
	root, err := filepath.EvalSymlinks(t.TempDir()) // the filesystem server compares real paths
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := 1; i <= files; i++ {
		var b strings.Builder
		for line := 0; b.Len() < 4000; line++ {
			fmt.Fprintf(&b, "note %d line %03d: shard %d answered %d requests in %d ms\n", i, line, line%7, line*37%1000, line*13%400)
		}
		p := filepath.Join(root, fmt.Sprintf("note-%d.txt", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}

	up := scriptedmodel.New(gatewaytest.Agent)
	defer up.Close()
	const model = "claude-sonnet-4-5"
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{root}}},
		"data_dir":   filepath.Join(dir, "data"),
		// The gateway compresses; the MCP side passes results through.
		"noa": map[string]any{"mcp": "recall"},
		"gateway": map[string]any{"enabled": true, "anthropic": map[string]any{"base_url": up.URL},
			// Claude Code's system prompt and tools take about 9K tokens of
			// it; the files, about 1.3K tokens each, outgrow the rest.
			"models": map[string]any{model: map[string]any{"context_window": 30000}}},
	})
	base, p := serveHTTP(t, cfg)

	home := t.TempDir()
	mcpConfig := `{"mcpServers":{"mcproxy":{"type":"http","url":"` + base + `/mcp"}}}`
	prompt := "Read these files and tell me in one line what each holds: " + strings.Join(paths, ", ") + "."
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", prompt, "--output-format", "stream-json", "--verbose",
		"--model", model, "--mcp-config", mcpConfig, "--strict-mcp-config",
		"--tools", "", // no built-in tools: the files are read through mcproxy
		"--allowedTools", "mcp__mcproxy__retrieve_tools,mcp__mcproxy__call_tool", "--permission-prompts", "none")
	// Claude Code's model requests pass a counter on their way to the
	// gateway: what it sent is what going straight would have sent.
	sent := &byteCounter{}
	counted := httptest.NewServer(sent.count(base, t))
	defer counted.Close()
	cmd.Dir, cmd.Env = home, claudeEnv(home, counted.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude: %v\nstderr: %s\nstdout: %s\nmcproxy:\n%s", err, stderr.String(), out, p.output())
	}

	// What Claude Code saw: its own messages and its final result.
	var result struct {
		Subtype  string `json:"subtype"`
		IsError  bool   `json:"is_error"`
		Result   string `json:"result"`
		NumTurns int    `json:"num_turns"`
	}
	var clientCalls, offered []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Content []struct {
					Type string `json:"type"`
					Name string `json:"name"`
				} `json:"content"`
			} `json:"message"`
			Tools []string `json:"tools"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			t.Fatalf("claude wrote a line that is not JSON: %s", sc.Bytes())
		}
		switch ev.Type {
		case "assistant":
			for _, c := range ev.Message.Content {
				if c.Type == "tool_use" {
					clientCalls = append(clientCalls, c.Name)
				}
			}
		case "system":
			offered = append(offered, ev.Tools...)
		case "result":
			_ = json.Unmarshal(sc.Bytes(), &result)
		}
	}
	if !slices.Contains(offered, "mcp__mcproxy__call_tool") {
		t.Errorf("Claude Code's init event lists tools %v, want mcproxy's meta tools", offered)
	}
	for _, tool := range offered {
		if strings.Contains(tool, "Compress") || strings.Contains(tool, "read_archive") {
			t.Errorf("Claude Code was offered %s", tool)
		}
	}
	if result.Subtype != "success" || result.IsError || !strings.Contains(result.Result, fmt.Sprintf("Read %d files", files)) {
		t.Fatalf("Claude Code's result: %+v, want success reporting the %d files\nstderr: %s", result, files, stderr.String())
	}
	reads := 0
	for _, name := range clientCalls {
		switch name {
		case "mcp__mcproxy__call_tool":
			reads++
		case "mcp__mcproxy__retrieve_tools":
		default:
			t.Errorf("Claude Code ran %s; the model's own tools must stay inside the gateway", name)
		}
	}
	if reads != files || clientCalls[0] != "mcp__mcproxy__retrieve_tools" {
		t.Errorf("Claude Code ran %v, want retrieve_tools then call_tool once per file", clientCalls)
	}

	// What the model saw: a nudge, its Compress answered inside the
	// gateway, and smaller requests after it.
	reqs := up.Requests()
	compressed, before, after := -1, 0, 0
	for i, r := range reqs {
		if r.Path != "/v1/messages" {
			continue
		}
		if compressed < 0 && answeredCompress(r.Body) {
			compressed = i
			before = scriptedmodel.EstimateTokens(reqs[i-1].Body)
			after = scriptedmodel.EstimateTokens(r.Body)
		}
	}
	if compressed < 0 {
		t.Fatalf("no upstream request carries an answered Compress call (%d requests)", len(reqs))
	}
	if !bytes.Contains(reqs[compressed-1].Body, []byte(gatewaytest.NudgeMarker)) {
		t.Errorf("the request before the Compress continuation carries no nudge")
	}
	if after >= before {
		t.Errorf("the continuation after Compress is ~%d tokens, want fewer than the ~%d of the request before it", after, before)
	}
	last := reqs[len(reqs)-1].Body
	if !bytes.Contains(last, []byte("[Compressed conversation section]")) || bytes.Contains(last, []byte("note 1 line 050")) {
		t.Errorf("the last request does not read the first file through its summary")
	}
	t.Logf("%d upstream requests, %d Claude Code turns; Compress answered in request %d (~%d -> ~%d tokens)", len(reqs), result.NumTurns, compressed+1, before, after)

	// Compression pays on this task: the gateway forwarded fewer bytes in
	// all (its hidden rounds included) than Claude Code sent.
	forwarded := 0
	for _, r := range reqs {
		if r.Path == "/v1/messages" {
			forwarded += len(r.Body)
		}
	}
	if straight := sent.total(); forwarded >= straight {
		t.Errorf("the gateway forwarded %d bytes of model requests, want fewer than the %d Claude Code sent", forwarded, straight)
	} else {
		t.Logf("forwarded %d bytes of model requests, %.1f%% fewer than the %d Claude Code sent", forwarded, 100*(1-float64(forwarded)/float64(straight)), straight)
	}

	// The conversation is a session on disk, listed with its block like an
	// MCP client's, and its archive holds what the summary replaced.
	code, list, errOut := runBinary(t, 60*time.Second, "sessions", "list", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`\t?\d+ +[1-9]\d* active / [1-9]`).MatchString(list) {
		t.Errorf("mcproxy sessions list: exit %d, %s%s; want the conversation with an active block", code, list, errOut)
	}
	archives, _ := filepath.Glob(filepath.Join(dir, "data", "sessions", "*", "archive", "tier1", "*.md"))
	found := false
	for _, a := range archives {
		if data, err := os.ReadFile(a); err == nil && bytes.Contains(data, []byte("note 1 line 050")) {
			found = true
		}
	}
	if !found {
		t.Errorf("no tier-1 archive under %s holds the first file's text (archives: %v)", filepath.Join(dir, "data", "sessions"), archives)
	}
}

// byteCounter sums the bodies of the model requests (POST /v1/messages)
// that pass it.
type byteCounter struct {
	mu sync.Mutex
	n  int
}

// count is a reverse proxy to base that counts what it forwards.
func (c *byteCounter) count(base string, t *testing.T) http.Handler {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // streamed answers pass at once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.mu.Lock()
			c.n += len(b)
			c.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rp.ServeHTTP(w, r)
	})
}

func (c *byteCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// answeredCompress reports whether a forwarded request holds a Compress
// call followed by its result: the continuation of a hidden round.
func answeredCompress(body []byte) bool {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	calls := map[string]bool{}
	for _, m := range req.Messages {
		var blocks []struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Name      string `json:"name"`
			ToolUseID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			switch {
			case b.Type == "tool_use" && b.Name == "Compress":
				calls[b.ID] = true
			case b.Type == "tool_result" && calls[b.ToolUseID]:
				return true
			}
		}
	}
	return false
}
