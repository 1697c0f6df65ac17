package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/testenv/rpctest"
)

// TestToolsAsSent (issue 29: no fields added to what passes through):
// mcproxy in direct mode with "prefix": "" in front of the Go SDK's
// conformance everything-server, whose tools carry no annotations; the
// tools/list a client reads from mcproxy, over stdio, streamable HTTP and
// legacy SSE, holds every tool exactly as the server sent it (compared as JSON
// values, member order aside): no "annotations": {} added.
func TestToolsAsSent(t *testing.T) {
	t.Parallel()
	ref := referenceServer(t)
	sent := toolsOf(t, "the server itself", stdioToolsList(t, exec.Command(ref), false))
	bare := 0
	for _, tool := range sent {
		if _, ok := tool["annotations"]; !ok {
			bare++
		}
	}
	if bare == 0 {
		t.Fatalf("every tool of the everything-server has annotations; the test needs one without")
	}
	config := func(t *testing.T) string {
		dir := t.TempDir()
		return writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
			"mcpServers":   map[string]any{"ref": map[string]any{"command": ref, "prefix": ""}},
			"mode":         "direct",
			"data_dir":     filepath.Join(dir, "data"),
			"init_timeout": "30s",
			"noa":          map[string]any{"enabled": false},
		})
	}
	check := func(t *testing.T, answer []byte) {
		got := toolsOf(t, "mcproxy", answer)
		if diff := cmp.Diff(sent, got); diff != "" {
			t.Errorf("tools/list through mcproxy differs from the server's own (-server +mcproxy):\n%s", diff)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		check(t, stdioToolsList(t, exec.Command(binary, "serve", "--stdio", "--config", config(t)), true))
	})
	t.Run("streamable HTTP", func(t *testing.T) {
		t.Parallel()
		base, _ := serveHTTP(t, config(t))
		check(t, httpToolsList(t, base+"/mcp"))
	})
	t.Run("legacy SSE", func(t *testing.T) {
		t.Parallel()
		base, _ := serveHTTP(t, config(t))
		check(t, sseToolsList(t, base))
	})
}

// toolsOf decodes a raw tools/list answer into its tools by name.
func toolsOf(t *testing.T, from string, answer []byte) map[string]map[string]any {
	t.Helper()
	var msg struct {
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(answer, &msg); err != nil || len(msg.Result.Tools) == 0 {
		t.Fatalf("tools/list from %s: got %s (%v), want tools", from, answer, err)
	}
	out := map[string]map[string]any{}
	for _, tool := range msg.Result.Tools {
		out[fmt.Sprint(tool["name"])] = tool
	}
	return out
}

const (
	rawInitialize  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"0"}}}`
	rawInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// rawToolsList is the tools/list request with id n.
func rawToolsList(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, n)
}

// stdioToolsList runs cmd as a stdio MCP server, initializes it with raw
// JSON lines and returns the raw tools/list answer; with retry, it asks
// again until the list holds a tool (mcproxy lists a server's tools once
// it is up).
func stdioToolsList(t *testing.T, cmd *exec.Cmd, retry bool) []byte {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()
	deadline := time.After(60 * time.Second)
	answer := func(id int) []byte {
		want := fmt.Sprintf(`"id":%d`, id)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("%s ended before answering request %d", cmd.Path, id)
				}
				if bytes.Contains(line, []byte(want)) {
					return line
				}
			case <-deadline:
				t.Fatalf("%s did not answer request %d within 60s", cmd.Path, id)
			}
		}
	}
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(rawInitialize)
	answer(0)
	send(rawInitialized)
	for id := 1; ; id++ {
		send(rawToolsList(id))
		got := answer(id)
		if !retry || bytes.Contains(got, []byte(`"inputSchema"`)) {
			return got
		}
		select {
		case <-deadline:
			t.Fatalf("tools/list from %s holds no tool within 60s: %s", cmd.Path, got)
		case <-time.After(100 * time.Millisecond): // the upstream is still starting
		}
	}
}

// httpToolsList initializes a streamable HTTP session at url with raw JSON
// and returns the raw tools/list answer, asking again until it holds a tool.
func httpToolsList(t *testing.T, url string) []byte {
	t.Helper()
	_, _, h := rpctest.PostMCP(t, url, "", rawInitialize)
	session := h.Get("Mcp-Session-Id")
	rpctest.PostMCP(t, url, session, rawInitialized)
	deadline := time.After(60 * time.Second)
	for id := 1; ; id++ {
		status, body, _ := rpctest.PostMCP(t, url, session, rawToolsList(id))
		if status != http.StatusOK {
			t.Fatalf("tools/list over HTTP: status %d: %s", status, body)
		}
		// Notifications may come first on the request's stream.
		answer := rpctest.Answer(body)
		if strings.Contains(answer, `"inputSchema"`) {
			return []byte(answer)
		}
		select {
		case <-deadline:
			t.Fatalf("tools/list over HTTP holds no tool within 60s: %s", body)
		case <-time.After(100 * time.Millisecond): // the upstream is still starting
		}
	}
}

// sseToolsList opens a legacy SSE session on the server at base (GET /sse,
// POSTs to the endpoint it names), initializes it with raw JSON and returns
// the raw tools/list answer from the stream, asking again until it holds a
// tool.
func sseToolsList(t *testing.T, base string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	events.Buffer(nil, 16<<20)
	// next is the data of the stream's next event.
	next := func() string {
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data:"); ok {
				return strings.TrimSpace(data)
			}
		}
		t.Fatalf("the SSE stream ended: %v", events.Err())
		return ""
	}
	endpoint := next()
	if !strings.HasPrefix(endpoint, "http") {
		endpoint = base + endpoint
	}
	post := func(body string) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s to %s: status %d", body, endpoint, resp.StatusCode)
		}
	}
	// answer is the data of the event that answers request id.
	answer := func(id int) string {
		want := fmt.Sprintf(`"id":%d,`, id)
		for {
			if data := next(); strings.Contains(data, want) && !strings.Contains(data, `"method"`) {
				return data
			}
		}
	}
	post(rawInitialize)
	answer(0)
	post(rawInitialized)
	for id := 1; ; id++ {
		post(rawToolsList(id))
		if got := answer(id); strings.Contains(got, `"inputSchema"`) {
			return []byte(got)
		}
		select {
		case <-ctx.Done():
			t.Fatal("tools/list over legacy SSE holds no tool within 60s")
		case <-time.After(100 * time.Millisecond): // the upstream is still starting
		}
	}
}
