package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// goUpstream is a small mcp-go server of our own, served over streamable
// HTTP from the test process, for faults the npm servers cannot show: a tool
// set that changes, a call that never ends, a server that goes away and
// comes back on the same address.
type goUpstream struct {
	t    testing.TB
	name string
	mcp  *mcpserver.MCPServer
	addr string
	// cancelled receives the "tag" argument of every wait call whose
	// context ended before it finished.
	cancelled chan string

	mu   sync.Mutex
	stop func()
}

func newGoUpstream(t testing.TB, name string) *goUpstream {
	u := &goUpstream{t: t, name: name, cancelled: make(chan string, 16)}
	u.mcp = mcpserver.NewMCPServer(name, "1.0.0", mcpserver.WithToolCapabilities(true))
	u.mcp.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo a message."), mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(name + " says " + req.GetString("message", "")), nil
		})
	u.mcp.AddTool(mcp.NewTool("wait", mcp.WithDescription("Block until cancelled."), mcp.WithString("tag", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				u.cancelled <- req.GetString("tag", "")
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				return mcp.NewToolResultText("waited a minute"), nil
			}
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.addr = ln.Addr().String()
	u.serve(ln)
	t.Cleanup(u.down)
	return u
}

func (u *goUpstream) url() string { return "http://" + u.addr + "/mcp" }

func (u *goUpstream) serve(ln net.Listener) {
	streamable := mcpserver.NewStreamableHTTPServer(u.mcp)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	u.mu.Lock()
	u.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		_ = srv.Close() // cut every connection: the server "crashes"
		<-done
	}
	u.mu.Unlock()
}

// down stops serving; calling it twice is fine.
func (u *goUpstream) down() {
	u.mu.Lock()
	stop := u.stop
	u.stop = nil
	u.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// up serves again on the same address.
func (u *goUpstream) up() {
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		u.t.Fatalf("relistening on %s: %v", u.addr, err)
	}
	u.serve(ln)
}

// TestFaultsEndToEnd drives the mcproxy binary through the faults of the
// issue with upstreams it cannot tell from real ones.
func TestFaultsEndToEnd(t *testing.T) {
	alpha, beta := newGoUpstream(t, "alpha"), newGoUpstream(t, "beta")
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"alpha": map[string]any{"url": alpha.url(), "call_timeout": "1s"},
			"beta":  map[string]any{"url": beta.url()},
		},
		"data_dir":  filepath.Join(dir, "data"),
		"log_level": "debug",
	})
	base, _ := serveHTTP(t, config)
	c := startHTTP(t, base+"/mcp")
	initialize(t, c)

	t.Run("list_changed reaches retrieve_tools", func(t *testing.T) {
		alpha.mcp.AddTool(mcp.NewTool("migrate_zebras", mcp.WithDescription("Plan the seasonal zebra migration route.")),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("north"), nil
			})
		deadline := time.Now().Add(15 * time.Second)
		for {
			res := callTool(t, c, "retrieve_tools", map[string]any{"query": "zebra migration"})
			if strings.Contains(text(res), "alpha:migrate_zebras") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("retrieve_tools 15s after list_changed: got %q, want alpha:migrate_zebras", text(res))
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := proxied(t, c, "alpha:migrate_zebras", nil); got != "north" {
			t.Errorf("calling the new tool: got %q, want %q", got, "north")
		}
	})

	t.Run("call past call_timeout names the limit", func(t *testing.T) {
		res := callTool(t, c, "call_tool", map[string]any{"name": "alpha:wait", "arguments": map[string]any{"tag": "timeout"}})
		for _, want := range []string{"alpha:wait timed out after 1s", "the limit set by mcpServers.alpha.call_timeout", "raise mcpServers.alpha.call_timeout"} {
			if !res.IsError || !strings.Contains(text(res), want) {
				t.Errorf("got %q (isError %v), want a tool error containing %q", text(res), res.IsError, want)
			}
		}
		expectCancelled(t, alpha, "timeout")
	})

	t.Run("client cancellation reaches the upstream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "call_tool"
		req.Params.Arguments = map[string]any{"name": "beta:wait", "arguments": map[string]any{"tag": "client-cancel"}}
		if _, err := c.CallTool(ctx, req); err == nil {
			t.Fatal("got a result, want the call to end with the client's deadline")
		}
		expectCancelled(t, beta, "client-cancel")
	})

	t.Run("a dead upstream fails clearly and comes back", func(t *testing.T) {
		alpha.down()
		res := callTool(t, c, "call_tool", map[string]any{"name": "alpha:echo", "arguments": map[string]any{"message": "x"}})
		if !res.IsError || !strings.Contains(text(res), `"alpha"`) {
			t.Errorf("call to a dead server: got %q (isError %v), want a tool error naming the server", text(res), res.IsError)
		}
		t.Logf("error while alpha is down: %s", text(res))
		if got := proxied(t, c, "beta:echo", map[string]any{"message": "still here"}); got != "beta says still here" {
			t.Errorf("other server while alpha is down: got %q", got)
		}

		alpha.up()
		deadline := time.Now().Add(45 * time.Second)
		for {
			res := callTool(t, c, "call_tool", map[string]any{"name": "alpha:echo", "arguments": map[string]any{"message": "back"}})
			if !res.IsError && upstreamText(res) == "alpha says back" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("alpha 45s after coming back: got %q, want it to work again", text(res))
			}
			time.Sleep(250 * time.Millisecond)
		}
	})
}

func expectCancelled(t *testing.T, u *goUpstream, tag string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-u.cancelled:
			if got == tag {
				return
			}
		case <-deadline:
			t.Fatalf("%s's wait(%s) was not cancelled within 10s, want the cancellation to reach it", u.name, tag)
		}
	}
}

// TestKilledStdioChildComesBack kills an npm stdio server under a running
// mcproxy: its calls fail with an error naming it, the other server keeps
// working, and it is back after the reconnect backoff.
func TestKilledStdioChildComesBack(t *testing.T) {
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"memory":     map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}},
			"filesystem": map[string]any{"command": testenv.NodeBin(t, "mcp-server-filesystem"), "args": []string{dir}},
		},
		"data_dir":  filepath.Join(dir, "data"),
		"log_level": "debug",
	})
	base, p := serveHTTP(t, config)
	c := startHTTP(t, base+"/mcp")
	initialize(t, c)
	proxied(t, c, "memory:read_graph", nil)

	pid := childPID(t, p.cmd.Process.Pid, "mcp-server-memory")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The first call after the kill may race the exit being noticed; within
	// a few tries (well inside the 1s first backoff) it must fail with an
	// error that names the server.
	var failed bool
	for i := 0; i < 20 && !failed; i++ {
		res := callTool(t, c, "call_tool", map[string]any{"name": "memory:read_graph", "arguments": map[string]any{}})
		if res.IsError {
			failed = true
			if !strings.Contains(text(res), `"memory"`) {
				t.Errorf("call to the killed server: got %q, want an error naming it", text(res))
			}
			t.Logf("error after the kill: %s", text(res))
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !failed {
		// The reconnect backoff starts at 1s; 20 quick calls fit well inside it.
		t.Error("every call right after the kill succeeded, want the killed server's calls to fail until it is back")
	}
	if got := proxied(t, c, "filesystem:list_allowed_directories", nil); !strings.Contains(got, dir) {
		t.Errorf("other server after the kill: got %q, want it to keep working", got)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		res := callTool(t, c, "call_tool", map[string]any{"name": "memory:read_graph", "arguments": map[string]any{}})
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("memory 45s after being killed: got %q, want it back", text(res))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if newPID := childPID(t, p.cmd.Process.Pid, "mcp-server-memory"); newPID == pid {
		t.Errorf("memory child pid: got the killed pid %d again, want a new process", pid)
	}
}

// childPID finds the direct child of parent whose command line contains name.
func childPID(t *testing.T, parent int, name string) int {
	t.Helper()
	pid := childPIDOrZero(parent, name)
	if pid == 0 {
		t.Fatalf("no child of %d running %s", parent, name)
	}
	return pid
}

// childPIDOrZero is childPID answering 0 when there is no such child.
func childPIDOrZero(parent int, name string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the parenthesized command: state, ppid, ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), name) {
			return pid
		}
	}
	return 0
}
