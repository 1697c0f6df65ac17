package upstream

// The test binary doubles as a small MCP upstream built with mcp-go's
// server package, for faults the npm reference servers cannot produce. A
// test runs it as a stdio child by re-executing os.Args[0] with
// MCPROXY_TEST_PEER set to a mode; TestMain then serves instead of testing.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap/zapcore"
)

const (
	peerModeEnv = "MCPROXY_TEST_PEER"     // which peer to run
	peerDirEnv  = "MCPROXY_TEST_PEER_DIR" // where the peer records what it saw
)

// rawSchema is served verbatim by the peer's "raw" tool: its key order,
// "$schema" and "title" would not survive a decode/encode through mcp.Tool.
const rawSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"Raw","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","minimum":1}},"required":["zeta"],"additionalProperties":false}`

// peerToolNames are the tools the "peer" mode lists from the start (sorted);
// with a page size of 2 they span three tools/list pages.
var peerToolNames = []string{"add_tool", "echo", "raw", "sleep", "whoami"}

func init() {
	mode := os.Getenv(peerModeEnv)
	if mode == "" {
		return
	}
	os.Exit(runPeer(mode))
}

func runPeer(mode string) int {
	switch mode {
	case "hang":
		// Reads requests and never answers; exits when stdin closes.
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "peer: cannot open database: permission denied")
		return 3
	case "flaky":
		// Crashes like "crash" until the test creates dir/fixed.
		if _, err := os.Stat(filepath.Join(os.Getenv(peerDirEnv), "fixed")); err != nil {
			fmt.Fprintln(os.Stderr, "peer: not fixed yet")
			return 3
		}
		mode = "peer"
	case "noisy":
		// Writes what badly behaved servers print to stdout, then serves.
		for i := range 7 {
			fmt.Printf("peer banner line %d\n", i+1)
		}
		fmt.Println(`{"level":"info","msg":"a log line on stdout"}`)
		fmt.Println()
		mode = "peer"
	case "deaf":
		// Serves, but never sees server/discover (it notes each one in
		// dir/discover-PID-N): a server that ignores methods it does not know.
		return runDeaf()
	case "modern":
		return runModernOnly()
	case "roots":
		return runRootsPeer()
	case "peer", "stubborn", "bulky":
	default:
		fmt.Fprintf(os.Stderr, "unknown peer mode %q\n", mode)
		return 2
	}
	if mode == "stubborn" {
		// Ignores stdin EOF and SIGTERM: only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
	}
	dir := os.Getenv(peerDirEnv)
	fmt.Fprintf(os.Stderr, "peer %s starting\npid %d\n", mode, os.Getpid())

	s := newPeerServer(dir)
	if mode == "bulky" {
		addBulkyTools(s)
	}
	err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout)
	if mode == "stubborn" {
		for {
			time.Sleep(time.Hour)
		}
	}
	if err != nil && err != io.EOF && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	return 0
}

// runDeaf serves the peer behind a filter that drops every
// server/discover request unanswered.
func runDeaf() int {
	dir := os.Getenv(peerDirEnv)
	n := 0
	return serveFiltered(context.Background(), dir, func(line []byte) ([]byte, bool) {
		if !strings.Contains(string(line), `"server/discover"`) {
			return nil, false
		}
		n++
		// Named by pid too: each child counts from 1.
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("discover-%d-%d", os.Getpid(), n)), line, 0o644)
		return nil, true
	})
}

// serveFiltered serves the peer over stdio behind intercept, which sees
// each line the client sends first: when it takes the line, what it
// returns (if anything) is the answer, and the server never sees it.
func serveFiltered(ctx context.Context, dir string, intercept func(line []byte) ([]byte, bool)) int {
	pr, pw := io.Pipe()
	out := zapcore.Lock(os.Stdout) // a filter's answer and the server's never interleave
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if answer, taken := intercept(sc.Bytes()); taken {
				if answer != nil {
					_, _ = out.Write(append(answer, '\n'))
				}
				continue
			}
			if _, err := fmt.Fprintln(pw, sc.Text()); err != nil {
				return
			}
		}
		pw.Close()
	}()
	err := server.NewStdioServer(newPeerServer(dir)).Listen(ctx, pr, out)
	if err != nil && err != io.EOF && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	return 0
}

// newPeerServer builds the fault-injection upstream. Its tools:
// echo(text); sleep(ms) which, when cancelled, writes the cancellation to
// dir/cancelled; add_tool(name) which adds a tool (mcp-go then sends
// tools/list_changed); whoami() returning cwd and PEER_SECRET; raw() whose
// schema is rawSchema. tools/list pages hold 2 tools.
func newPeerServer(dir string) *server.MCPServer {
	// Each tools/call's JSON-RPC id goes to dir/call-id, so a test can
	// tell who sent the request (mcp-go's client numbers its own), and its
	// arguments as sent to dir/call-args.
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(func(_ context.Context, id any, req *mcp.CallToolRequest) {
		if dir != "" {
			_ = os.WriteFile(filepath.Join(dir, "call-id"), []byte(fmt.Sprint(id)), 0o644)
			_ = os.WriteFile(filepath.Join(dir, "call-args"), req.Params.RawArguments, 0o644)
		}
	})
	s := server.NewMCPServer("mcproxy-test-peer", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithPaginationLimit(2),
		server.WithHooks(hooks))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo the text back."),
		mcp.WithString("text", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("sleep", mcp.WithDescription("Sleep for ms milliseconds."),
		mcp.WithNumber("ms", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d := time.Duration(req.GetFloat("ms", 0)) * time.Millisecond
			if dir != "" {
				_ = os.WriteFile(filepath.Join(dir, "started"), []byte("1"), 0o644)
			}
			select {
			case <-time.After(d):
				return mcp.NewToolResultText("slept"), nil
			case <-ctx.Done():
				if dir != "" {
					_ = os.WriteFile(filepath.Join(dir, "cancelled"), []byte(context.Cause(ctx).Error()), 0o644)
				}
				return nil, ctx.Err()
			}
		})
	s.AddTool(mcp.NewTool("add_tool", mcp.WithDescription("Add a tool named name."),
		mcp.WithString("name", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("name", "")
			s.AddTool(mcp.NewTool(name, mcp.WithDescription("A tool added at run time.")),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("fresh"), nil
				})
			return mcp.NewToolResultText("added " + name), nil
		})
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("Report cwd and PEER_SECRET.")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			wd, _ := os.Getwd()
			b, _ := json.Marshal(map[string]string{"cwd": wd, "secret": os.Getenv("PEER_SECRET"), "home": os.Getenv("HOME")})
			return mcp.NewToolResultText(string(b)), nil
		})
	s.AddTool(mcp.NewToolWithRawSchema("raw", "A tool with a hand-written schema.", json.RawMessage(rawSchema)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("raw always fails"), nil
		})
	return s
}
