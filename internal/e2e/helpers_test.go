package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
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

// binary is the mcproxy executable built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "mcproxy-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "mcproxy")
	// By import path, so the build does not depend on where the test runs.
	build := exec.Command("go", "build", "-o", binary, "github.com/mcproxy/mcproxy/cmd/mcproxy")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mcproxy: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	testenv.StopPostgres()
	return code
}

// freeAddr returns a loopback address with a port that was free a moment
// ago and that no other test of this binary is handed (testenv.FreeAddr).
func freeAddr(t testing.TB) string { return testenv.FreeAddr(t) }

// waitListening polls until something accepts connections on addr.
func waitListening(t testing.TB, addr string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if p.exited() {
			t.Fatalf("%s exited before listening on %s:\n%s", p.name, addr, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is not listening on %s after 30s:\n%s", p.name, addr, p.output())
}

// syncBuffer is a bytes.Buffer safe for a process's writes and a test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a subprocess owned by one test.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func (p *proc) output() string { return p.out.String() }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProc starts cmd in its own process group, with stdout and stderr
// captured. Cleanup sends SIGTERM and expects an exit within 10s (graceful
// shutdown), then kills the whole group as a backstop.
func startProc(t testing.TB, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(10 * time.Second):
				t.Errorf("%s did not exit within 10s of SIGTERM", name)
			}
		}
		// Anything the process left behind in its group goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

// fixture is a set of real upstream servers and an mcproxy config over them.
type fixture struct {
	dir    string
	fsDir  string
	config string
	cfg    map[string]any
}

// newFixture starts server-everything over streamable HTTP and over SSE and
// writes a config with five upstreams: everything (stdio), everything_http,
// everything_sse, filesystem (stdio, on a temp dir) and memory (stdio, with
// its file in a temp dir).
func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	fsDir := filepath.Join(dir, "files")
	if err := os.Mkdir(fsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The filesystem server compares real paths.
	fsDir, err := filepath.EvalSymlinks(fsDir)
	if err != nil {
		t.Fatal(err)
	}
	everything := testenv.NodeBin(t, "mcp-server-everything")
	httpAddr, sseAddr := freeAddr(t), freeAddr(t)
	for _, s := range []struct{ name, arg, addr string }{
		{"everything-streamableHttp", "streamableHttp", httpAddr},
		{"everything-sse", "sse", sseAddr},
	} {
		_, port, _ := net.SplitHostPort(s.addr)
		cmd := exec.Command(everything, s.arg)
		cmd.Env = append(os.Environ(), "PORT="+port)
		p := startProc(t, s.name, cmd)
		waitListening(t, s.addr, p)
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"everything":      map[string]any{"command": everything},
			"everything_http": map[string]any{"url": "http://" + httpAddr + "/mcp"},
			"everything_sse":  map[string]any{"url": "http://" + sseAddr + "/sse", "transport": "sse"},
			"filesystem":      map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{fsDir}},
			"memory": map[string]any{
				"command": testenv.NodeBin(t, "mcp-server-memory"),
				"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")},
			},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"init_timeout": "60s",
		"log_level":    "debug",
	}
	f := &fixture{dir: dir, fsDir: fsDir, cfg: cfg}
	f.config = f.writeConfig(t, "config.json", nil)
	return f
}

// writeConfig writes the fixture's config with extra top-level keys.
func (f *fixture) writeConfig(t testing.TB, name string, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{}
	for k, v := range f.cfg {
		cfg[k] = v
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfigFile(t, filepath.Join(f.dir, name), cfg)
}

// writeConfigFile writes cfg as an mcproxy JSON config at path and returns
// path.
func writeConfigFile(t testing.TB, path string, cfg map[string]any) string {
	t.Helper()
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveHTTP runs `mcproxy serve` on a free loopback port and returns its
// base URL.
func serveHTTP(t testing.TB, config string, extraArgs ...string) (string, *proc) {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--config", config, "--listen", addr}, extraArgs...)
	p := startProc(t, "mcproxy serve", exec.Command(binary, args...))
	waitListening(t, addr, p)
	return "http://" + addr, p
}

// startHTTP opens an mcp-go streamable HTTP client on url and starts its
// transport; the test closes it. The caller initializes the session.
func startHTTP(t testing.TB, url string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// startStdio runs `mcproxy args...` under an mcp-go stdio client; the test
// closes it. The caller initializes the session.
func startStdio(t testing.TB, args ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(binary, os.Environ(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func initialize(t testing.TB, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "mcproxy-e2e", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func callTool(t testing.TB, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// proxied calls an upstream tool through call_tool, fails on a tool error,
// and returns the upstream's text: with noa on (the default) the result must
// end in a ref tag, which is checked and left out.
func proxied(t testing.TB, c *client.Client, id string, args map[string]any) string {
	t.Helper()
	res := callTool(t, c, "call_tool", map[string]any{"name": id, "arguments": args})
	if res.IsError {
		t.Fatalf("call_tool %s: got a tool error: %s", id, text(res))
	}
	if refOf(res) == "" {
		t.Fatalf("call_tool %s: got %q, want the result to end with noa's ref tag", id, text(res))
	}
	return upstreamText(res)
}

// refTag is noa's tag on a result: its ref and frozen token count.
var refTag = regexp.MustCompile(`^\[(m\d{5}) · [0-9.,]+K? tok\]$`)

// isNoaBlock reports whether a text block is one noa added to a result: the
// ref tag or a nudge.
func isNoaBlock(s string) bool { return refTag.MatchString(s) || strings.HasPrefix(s, "[noa]") }

// upstreamText joins a result's text blocks except those noa added.
func upstreamText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok && !isNoaBlock(tc.Text) {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// refOf returns the ref a result was tagged with, or "".
func refOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			if m := refTag.FindStringSubmatch(tc.Text); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// nudgeOf returns a result's nudge block, or "".
func nudgeOf(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok && strings.HasPrefix(tc.Text, "[noa]") {
			return tc.Text
		}
	}
	return ""
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func listTools(t testing.TB, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// exitCode runs the binary to completion and returns its exit code and output.
func runBinary(t testing.TB, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	return runBinaryIn(t, timeout, "", nil, args...)
}

// runBinaryIn is runBinary in folder dir ("" = this one) with environment
// env (nil = this process's).
func runBinaryIn(t testing.TB, timeout time.Duration, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running mcproxy %v: %v\n%s", args, err, stderr.String())
	return 0, "", ""
}

// waitFor polls cond every 200ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
