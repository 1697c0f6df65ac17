package e2e

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// warmConfig writes a config whose filesystem and memory servers (npm
// reference servers over stdio) start only after delay, plus, when hang is
// set, a server "hang" that never answers initialize. It returns the config path.
func warmConfig(t testing.TB, dir string, delay time.Duration, hang bool) string {
	t.Helper()
	fsDir := filepath.Join(dir, "files")
	if err := os.MkdirAll(fsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fsDir, err := filepath.EvalSymlinks(fsDir)
	if err != nil {
		t.Fatal(err)
	}
	slow := func(bin string, args ...string) map[string]any {
		// sleep, then become the server: a server that takes seconds to
		// start, as npx-launched servers often do.
		script := "sleep " + strings.TrimSuffix(delay.String(), "s") + "; exec \"$0\" \"$@\""
		return map[string]any{"command": "/bin/sh", "args": append([]string{"-c", script, bin}, args...)}
	}
	memory := slow(testenv.NodeBin(t, "mcp-server-memory"))
	memory["env"] = map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}
	servers := map[string]any{
		"filesystem": slow(testenv.NodeBin(t, "mcp-server-filesystem"), fsDir),
		"memory":     memory,
	}
	if hang {
		// Reads every request, answers none, and ends with its stdin.
		servers["hang"] = map[string]any{"command": "/bin/sh", "args": []string{"-c", "while read -r line; do :; done"}}
	}
	return writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": servers,
		"data_dir":   filepath.Join(dir, "data"),
		"log_level":  "warn",
	})
}

// serveStdio starts `mcproxy serve --stdio` on config in its own process
// group and returns an initialized client over its pipes and when the
// process was started. The process is stopped, and waited for, when the
// test ends or stop is called, whichever comes first: the next run opens
// the same index, so this one must be gone first.
func serveStdio(t testing.TB, config string) (c *client.Client, started time.Time, stop func()) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--stdio", "--config", config)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = stdin.Close()
			select {
			case <-exited:
			case <-time.After(15 * time.Second):
				t.Errorf("mcproxy did not exit within 15s of its stdin closing:\n%s", logs.String())
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		})
	}
	t.Cleanup(stop)
	c = client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(strings.NewReader(""))))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	return c, started, stop
}

// retrieveUntil asks retrieve_tools query until the answer contains until
// ("" takes the first answer) and returns it.
func retrieveUntil(t testing.TB, c *client.Client, query, until string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "retrieve_tools"
	req.Params.Arguments = map[string]any{"query": query}
	for {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("retrieve_tools: %v", err)
		}
		if until == "" || strings.Contains(text(res), until) {
			return text(res)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("retrieve_tools never answered with %q: last answer %q", until, text(res))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// firstRetrieve starts mcproxy on config and asks retrieve_tools "read a
// file" (again, until the answer contains until, when it is set: the
// upstreams are then up and their tool lists saved); it returns the time
// from just before the process started to the first answer, and that
// answer. The process is stopped before it returns.
func firstRetrieve(t testing.TB, config, until string) (time.Duration, string) {
	t.Helper()
	c, started, stop := serveStdio(t, config)
	defer stop()
	answer := retrieveUntil(t, c, "read a file", "")
	d := time.Since(started)
	if until != "" {
		retrieveUntil(t, c, "read a file", until)
	}
	return d, answer
}

// BenchmarkWarmStart measures how soon after the process starts a client's
// first retrieve_tools is answered (issue 13, warm start), through the
// binary over stdio. Each case runs a cold start (empty data_dir), one run
// that waits for the upstreams (so their tool lists are saved), then b.N
// warm restarts, reporting the cold and warm first answers in ms. "slow
// upstreams" has two upstreams that take 3 s to start; "one hangs" adds to
// two quick ones a third that never answers initialize (its init_timeout is
// the default 30 s). The answers are checked: a warm one finds the
// filesystem tools, a cold one of slow upstreams names them as connecting.
// Nothing is asserted about time.
func BenchmarkWarmStart(b *testing.B) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		hang  bool
	}{
		{"slow upstreams", 3 * time.Second, false},
		{"one hangs", 0, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			config := warmConfig(b, b.TempDir(), tc.delay, tc.hang)
			check := func(what, answer, want string) {
				if !strings.Contains(answer, want) {
					b.Fatalf("%s: first retrieve_tools answered %q, want it to contain %q", what, answer, want)
				}
			}
			const found = "filesystem:read_text_file"
			cold, answer := firstRetrieve(b, config, "")
			if tc.delay > 0 {
				check("cold start", answer, "Not connected right now: filesystem (connecting; its tools are not searched)")
			} else {
				check("cold start", answer, found)
			}
			firstRetrieve(b, config, found)
			var warm time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d, answer := firstRetrieve(b, config, "")
				check("warm restart", answer, found)
				if tc.delay > 0 {
					check("warm restart", answer, "filesystem (connecting; ")
				}
				warm += d
			}
			b.StopTimer()
			b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
			b.ReportMetric(float64(warm.Milliseconds())/float64(b.N), "warm-ms")
		})
	}
}

// TestWarmStart restarts the binary over the data_dir of a run whose
// upstreams came up: before the slow ones connect again, retrieve_tools and
// describe_tool answer from their last known tools (marked as such), a
// call_tool waits for its server, a server that hangs at initialize or
// fails is named in the answer with its state, and once a server is up
// its mark is gone.
func TestWarmStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := warmConfig(t, dir, 3*time.Second, true)
	var cfg map[string]any
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["mcpServers"].(map[string]any)["broken"] = map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo no such thing >&2; exit 3"}}
	writeConfigFile(t, config, cfg)

	// The first run knows nothing yet: it waits for the slow servers.
	c, _, stop := serveStdio(t, config)
	retrieveUntil(t, c, "read a file", "filesystem:read_text_file")
	retrieveUntil(t, c, "read the knowledge graph", "memory:read_graph")
	stop()

	c, _, _ = serveStdio(t, config)
	first := retrieveUntil(t, c, "read a file", "")
	for _, want := range []string{
		"filesystem:read_text_file",
		"Not connected right now: ",
		"filesystem (connecting; ",
		" from its tool list of the last run, and call_tool waits for it to connect)",
		"hang (connecting; its tools are not searched)",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first retrieve_tools after a restart: got %q, want it to contain %q", first, want)
		}
	}
	described := text(callTool(t, c, "describe_tool", map[string]any{"names": []string{"filesystem:read_text_file"}}))
	if !strings.Contains(described, `"inputSchema"`) || !strings.Contains(described, "still connecting") {
		t.Errorf("describe_tool while filesystem connects: got %q, want its schema and a note that it is still connecting", described)
	}
	res := callTool(t, c, "call_tool", map[string]any{"name": "filesystem:list_allowed_directories", "arguments": map[string]any{}})
	if res.IsError || !strings.Contains(text(res), filepath.Join(dir, "files")) {
		t.Errorf("call_tool while filesystem connects: got %q (isError %v), want the allowed directory once it is up", text(res), res.IsError)
	}
	later := retrieveUntil(t, c, "read a file", "filesystem:read_text_file")
	if strings.Contains(later, "filesystem (connecting") || !strings.Contains(later, "hang (connecting; its tools are not searched)") ||
		!regexp.MustCompile(`broken \(down: [^()]*\([^()]*no such thing\); its tools are not searched\)`).MatchString(later) {
		t.Errorf("retrieve_tools once filesystem is up: got %q, want only hang (connecting) and broken (down, with its stderr) named as not connected", later)
	}
}
