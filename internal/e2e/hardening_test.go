package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/testenv/rpctest"
)

// procUsage is what a process holds: open descriptors, resident memory
// and its peak (kB).
type procUsage struct{ fds, rssKB, peakKB int }

func usageOf(t testing.TB, pid int) procUsage {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	kB := func(key string) int {
		m := regexp.MustCompile(`(?m)^` + key + `:\s+(\d+) kB`).FindSubmatch(status)
		if m == nil {
			t.Fatalf("no %s in /proc/%d/status", key, pid)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	return procUsage{fds: len(fds), rssKB: kB("VmRSS"), peakKB: kB("VmHWM")}
}

// hardeningConfig is a config over server-everything (stdio) with extra
// top-level keys.
func hardeningConfig(t *testing.T, extra map[string]any) (config, data string) {
	t.Helper()
	dir := t.TempDir()
	data = filepath.Join(dir, "data")
	cfg := map[string]any{
		"mcpServers":   map[string]any{"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")}},
		"data_dir":     data,
		"init_timeout": "60s",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfigFile(t, filepath.Join(dir, "config.json"), cfg), data
}

// post sends body to url in session (when not empty) and returns the status,
// the answer and its headers (rpctest.PostMCP).
func post(t *testing.T, url, session, body string) (int, string, http.Header) {
	t.Helper()
	return rpctest.PostMCP(t, url, session, body)
}

const initMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`

// runAbandon runs abandon.mjs: n sessions with the TypeScript SDK, one call
// each, none closed with DELETE.
func runAbandon(t *testing.T, url string, n int) {
	t.Helper()
	arg, _ := json.Marshal(map[string]any{"url": url, "sessions": n, "parallel": 20})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "abandon.mjs"), string(arg))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("abandon.mjs (TypeScript SDK client): %v\n%s", err, stderr.Bytes())
	}
	var got struct{ Sessions, IDs int }
	if err := json.Unmarshal(out, &got); err != nil || got.Sessions != n || got.IDs != n {
		t.Fatalf("abandon.mjs printed %q (%v), want %d sessions with distinct ids", out, err, n)
	}
}

// 500 sessions abandoned the way the TypeScript SDK's close() leaves them
// (no DELETE) hold few descriptors while idle and none once the idle
// timeout has passed, and a second 500 do not grow memory beyond what the
// first left.
func TestAbandonedSessionsAreReleased(t *testing.T) {
	t.Parallel()
	config, _ := hardeningConfig(t, map[string]any{"session_idle_timeout": "3s"})
	base, p := serveHTTP(t, config)
	pid := p.cmd.Process.Pid
	// One session first, so the upstream is up and the baseline counts it.
	runAbandon(t, base+"/mcp", 1)
	settle := func(what string, fdsAtMost int) procUsage {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			u := usageOf(t, pid)
			if u.fds <= fdsAtMost {
				return u
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d descriptors open 30s after the last request, want at most %d", what, u.fds, fdsAtMost)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// The warm-up session itself times out first: wait for the log to say
	// it was closed (idle timeout plus one sweep), not for a fixed time.
	const closedIdle = "closed idle client sessions"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.output(), closedIdle); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the warm-up session was not closed 30s after it went idle (session_idle_timeout 3s); log:\n%s", p.output())
		}
	}
	warmClosed := strings.Count(p.output(), closedIdle)
	before := usageOf(t, pid)

	runAbandon(t, base+"/mcp", 500)
	during := usageOf(t, pid)
	// Before the timeout, idle sessions hold no files either: only the 64
	// most recently written keep theirs open (two descriptors each).
	if during.fds > before.fds+250 {
		t.Errorf("right after 500 sessions: %d descriptors open (%d before), want at most 250 more", during.fds, before.fds)
	}
	first := settle("after 500 abandoned sessions", before.fds+5)
	runAbandon(t, base+"/mcp", 500)
	second := settle("after 500 more", before.fds+5)
	t.Logf("descriptors %d -> %d (with 500 sessions open) -> %d -> %d; RSS %d -> %d -> %d kB",
		before.fds, during.fds, first.fds, second.fds, before.rssKB, first.rssKB, second.rssKB)
	// Memory: the second round leaves RSS within 25% (and 20 MB) of what
	// the first left; a leak of the sessions' state would add as much again.
	if limit := first.rssKB + max(first.rssKB/4, 20<<10); second.rssKB > limit {
		t.Errorf("RSS after a second 500 abandoned sessions: %d kB, want at most %d kB (after the first 500: %d kB)", second.rssKB, limit, first.rssKB)
	}
	if strings.Count(p.output(), closedIdle) <= warmClosed {
		t.Error("the log does not report closing the abandoned sessions as idle")
	}
}

// Only issued session ids are served through the binary: a made-up id gets
// 404 and creates nothing; DELETE ends a session for good; one session
// cannot read another's archive; and after a restart no old id is served.
func TestSessionIsolationThroughBinary(t *testing.T) {
	t.Parallel()
	config, data := hardeningConfig(t, map[string]any{"noa": map[string]any{"max_result_tokens": 500}})
	base, p := serveHTTP(t, config)
	url := base + "/mcp"
	sessions := filepath.Join(data, "sessions")
	countDirs := func() int {
		entries, _ := os.ReadDir(sessions)
		return len(entries)
	}
	call := func(session, tool string, args map[string]any) (int, string) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		code, out, _ := post(t, url, session, string(body))
		// The answer may come streamed, after the tools/list_changed of an
		// upstream that came up meanwhile.
		out = rpctest.Answer(out)
		// The answer's text, when it is a tool result.
		var resp struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(out), &resp) == nil && len(resp.Result.Content) > 0 {
			var texts []string
			for _, c := range resp.Result.Content {
				texts = append(texts, c.Text)
			}
			out = strings.Join(texts, "\n")
		}
		return code, out
	}
	echo := func(msg string) map[string]any {
		return map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": msg}}
	}

	for _, id := range []string{"made-up", "mcp-session-0b6c7a2e-5d8f-4c1e-9a3b-2f7d6e8c9a10", "mcp-" + strings.Repeat("ab", 16)} {
		if code, out := call(id, "call_tool", echo("hi")); code != http.StatusNotFound {
			t.Errorf("made-up id %q: got %d %q, want 404", id, code, out)
		}
	}
	if n := countDirs(); n != 0 {
		t.Fatalf("made-up ids created %d session directories", n)
	}

	open := func() string {
		code, out, h := post(t, url, "", initMsg)
		if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %d %q", code, out)
		}
		return h.Get("Mcp-Session-Id")
	}
	a, b := open(), open()
	secret := "SECRET-OF-A " + strings.Repeat("alpha bravo charlie delta ", 400)
	code, out := call(a, "call_tool", echo(secret))
	ref := regexp.MustCompile(`read_archive \{"ref":"(m\d+)"`).FindStringSubmatch(out)
	if code != http.StatusOK || ref == nil {
		t.Fatalf("a long result in session A: got %d %.300q, want it cut with a read_archive pointer", code, out)
	}
	if _, out := call(a, "read_archive", map[string]any{"ref": ref[1]}); !strings.Contains(out, "SECRET-OF-A") {
		t.Fatalf("session A reading its own archive %s: got %.300q", ref[1], out)
	}
	call(b, "call_tool", echo("b's own call"))
	if _, out := call(b, "read_archive", map[string]any{"ref": ref[1]}); strings.Contains(out, "SECRET-OF-A") {
		t.Fatalf("session B read session A's archive: %.300q", out)
	}

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", b)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, out := call(b, "call_tool", echo("again")); code != http.StatusNotFound {
		t.Errorf("id after DELETE: got %d %q, want 404", code, out)
	}

	// Restart on the same data directory: A's id, never deleted, is not
	// served; its files stay for the CLI.
	p.stop(t)
	base2, _ := serveHTTP(t, config)
	code, _, _ = post(t, base2+"/mcp", a, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_archive","arguments":{"ref":"`+ref[1]+`"}}}`)
	if code != http.StatusNotFound {
		t.Errorf("session A's id after a restart: got %d, want 404", code)
	}
	if _, err := os.Stat(filepath.Join(sessions, a, "transcript.jsonl")); err != nil {
		t.Errorf("session A's transcript should stay for the CLI: %v", err)
	}
}

// A 60 MB batch is refused (limits.max_batch) without its messages being
// run, and the proxy's peak memory grows by about the body's size, not by
// gigabytes.
func TestHugeBatchRefused(t *testing.T) {
	t.Parallel()
	config, _ := hardeningConfig(t, nil)
	base, p := serveHTTP(t, config)
	_, _, h := post(t, base+"/mcp", "", initMsg)
	session := h.Get("Mcp-Session-Id")
	before := usageOf(t, p.cmd.Process.Pid)
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < 60<<20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
	}
	b.WriteString("]")
	code, out, _ := post(t, base+"/mcp", session, b.String())
	if code != http.StatusBadRequest || !strings.Contains(out, "limits.max_batch") {
		t.Fatalf("60 MB batch: got %d %.300q, want 400 naming limits.max_batch", code, out)
	}
	after := usageOf(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %d -> %d kB for a %d-byte batch", before.peakKB, after.peakKB, b.Len())
	// The body is held once (about 60 MB); before the limits a batch like
	// this took 2.5 GB.
	if grown := after.peakKB - before.peakKB; grown > 120<<10 {
		t.Errorf("peak RSS grew by %d kB for a 60 MB batch, want under 120 MB", grown)
	}
}

// An upstream that writes a 200 MB line gets its caller a clear error
// naming limits.max_message_bytes, the line is never held whole, and the
// upstream is restarted.
func TestHugeUpstreamLine(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("testdata", "bigline.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers":   map[string]any{"big": map[string]any{"command": testenv.Node(t), "args": []string{script, strconv.Itoa(200 << 20)}}},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
	})
	base, p := serveHTTP(t, config)
	c := startHTTP(t, base+"/mcp")
	initialize(t, c)
	if got := proxied(t, c, "big:echo", map[string]any{"text": "warm"}); got != "echo: warm" {
		t.Fatalf("echo: %q", got)
	}
	before := usageOf(t, p.cmd.Process.Pid)
	res := callTool(t, c, "call_tool", map[string]any{"name": "big:flood", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "limits.max_message_bytes") {
		t.Fatalf("a 200 MB upstream line: got %.400q (isError %v), want an error naming limits.max_message_bytes", text(res), res.IsError)
	}
	after := usageOf(t, p.cmd.Process.Pid)
	t.Logf("peak RSS %d -> %d kB for a 200 MB line", before.peakKB, after.peakKB)
	if grown := after.peakKB - before.peakKB; grown > 250<<10 {
		t.Errorf("peak RSS grew by %d kB, want well under the line's 200 MB plus the 64 MB kept", grown)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		res := callTool(t, c, "call_tool", map[string]any{"name": "big:echo", "arguments": map[string]any{"text": "back"}})
		if !res.IsError && strings.Contains(text(res), "echo: back") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not come back: %.300q", text(res))
		}
		time.Sleep(time.Second)
	}
}

// stop ends p with SIGTERM and waits for it to exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not exit within 15s of SIGTERM", p.name)
	}
}
