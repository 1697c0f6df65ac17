//go:build unix

package upstream

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startHTTPEverything runs server-everything in an HTTP mode
// ("streamableHttp" or "sse") on a free loopback port and returns its base
// URL once it accepts connections. The test stops it.
func startHTTPEverything(t *testing.T, mode string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(testenv.NodeBin(t, "mcp-server-everything"), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its chatter is shown only when the test fails.
	out, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting server-everything %s: %v", mode, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("server-everything %s output:\n%s", mode, b)
		}
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitUntil(t, 30*time.Second, "server-everything "+mode+" to listen on "+addr, func() bool {
		select {
		case <-exited:
			t.Fatalf("server-everything %s exited before listening", mode)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	return "http://" + addr
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// peerServer configures the test binary as a stdio upstream in mode and
// returns the directory the peer records into.
func peerServer(t *testing.T, mode string) (config.ServerConfig, string) {
	t.Helper()
	dir := t.TempDir()
	return config.ServerConfig{
		Command: os.Args[0],
		Args:    []string{"-test.run=^$"},
		Env:     map[string]string{peerModeEnv: mode, peerDirEnv: dir},
	}, dir
}

// startManager starts a Manager for servers and closes it (checking that
// nothing it started is left) when the test ends.
func startManager(t *testing.T, servers map[string]config.ServerConfig, opts Options) *Manager {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	m := New(&config.Config{MCPServers: servers, InitTimeout: config.Duration(20 * time.Second)}, opts)
	t.Cleanup(func() { closeAndCheck(t, m) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.Start(ctx)
	return m
}

// closeAndCheck closes m and fails if a child it started is still alive or
// a goroutine of this package or of mcp-go's client is still running.
func closeAndCheck(t *testing.T, m *Manager) {
	t.Helper()
	var pids []int
	for _, name := range m.names {
		l := m.links[name]
		l.mu.Lock()
		if l.sess != nil && l.sess.proc != nil {
			pids = append(pids, l.sess.proc.pid)
		}
		l.mu.Unlock()
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child %d is still alive after Close", pid)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked := leakedGoroutines()
		if leaked == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left after Close:\n%s", leaked)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leakedGoroutines lists goroutines running code of this package (other
// than tests) or of mcp-go's client.
func leakedGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "_test.go") || strings.Contains(g, "testing.tRunner") ||
			strings.Contains(g, "testing.(*T).Run") || strings.Contains(g, "httptest") ||
			strings.Contains(g, "mcp-go/server") {
			continue
		}
		if strings.Contains(g, "mcproxy/internal/upstream.") || strings.Contains(g, "mcp-go/client") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// observed returns a logger that records everything at debug level.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	return zap.New(core), logs
}

// text joins a result's text content.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// call runs a tool with a generous deadline and fails the test on error.
func call(t *testing.T, m *Manager, server, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Call(ctx, server, tool, args)
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", server, tool, err)
	}
	return res
}

// statusOf returns one server's status.
func statusOf(t *testing.T, m *Manager, server string) Status {
	t.Helper()
	for _, s := range m.Status() {
		if s.Server == server {
			return s
		}
	}
	t.Fatalf("no status for %q", server)
	return Status{}
}

// childPID is the pid of a stdio server's current child.
func childPID(t *testing.T, m *Manager, server string) int {
	t.Helper()
	l := m.links[server]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil || l.sess.proc == nil {
		t.Fatalf("%q has no running child", server)
	}
	return l.sess.proc.pid
}

func toolNames(tools []config.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.ID)
	}
	return names
}

// protocolOf is the revision the "upstream ready" log says server is
// spoken to in ("" before it is ready).
func protocolOf(logs *observer.ObservedLogs, server string) string {
	for _, e := range logs.FilterMessage("upstream ready").All() {
		f := e.ContextMap()
		if f["upstream"] == server {
			p, _ := f["protocol"].(string)
			return p
		}
	}
	return ""
}
