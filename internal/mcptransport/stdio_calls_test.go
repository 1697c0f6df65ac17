package mcptransport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// leanServer is an MCP server with two tools: "path" answers which path
// it runs on (callPath); "echo" answers its message, and when the message
// is "hold" first sends its path on entered and waits until hold closes.
func leanServer(entered chan<- string, hold <-chan struct{}) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("lean", "1.0.0", mcpserver.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("path"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(callPath()), nil
	})
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msg := req.GetString("message", "")
		if msg == "hold" {
			entered <- callPath()
			<-hold
		}
		return mcp.NewToolResultText("echo: " + msg), nil
	})
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- callPath()
		<-ctx.Done()
		entered <- "cancelled"
		return mcp.NewToolResultText("cancelled"), nil
	})
	return s
}

// callPath is "lean" on a worker of the lean tools/call path
// (stdio_calls.go), "sdk" otherwise.
func callPath() string {
	buf := make([]byte, 64<<10)
	if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*stdioCalls).run") {
		return "lean"
	}
	return "sdk"
}

// stdioPeer is a client of ServeStdio over a pair of pipes.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
}

func serveStdioPeer(t *testing.T, srv *mcpserver.MCPServer, opts Options) *stdioPeer {
	t.Helper()
	f, err := New(Deps{MCP: srv}, opts)
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	go func() {
		err := f.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		p.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(p.close)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *stdioPeer) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("stdio output ended")
		}
		return l
	case <-time.After(10 * time.Second):
		p.t.Fatal("no stdio output line within 10s")
		return ""
	}
}

// close ends the input and waits for ServeStdio to return (its workers
// with it: the package's leak check sees any left).
func (p *stdioPeer) close() {
	p.in.Close()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("ServeStdio at end of input: %v", err)
		}
	case <-time.After(10 * time.Second):
		p.t.Error("ServeStdio did not return at the end of its input")
	}
}

func call(id int, tool, message string) string {
	args := "{}"
	if message != "" {
		args = `{"message":"` + message + `"}`
	}
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// A single tools/call line takes the lean path; one in a batch, and every
// line with StdioSDKDispatch, goes through mcp-go's StdioServer.
func TestStdioToolsCallTakesLeanPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		line string
		want string
	}{
		{"single call", Options{}, call(1, "path", ""), "lean"},
		{"call in a batch", Options{}, "[" + call(1, "path", "") + "]", "sdk"},
		{"sdk dispatch", Options{StdioSDKDispatch: true}, call(1, "path", ""), "sdk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := serveStdioPeer(t, leanServer(nil, nil), tc.opts)
			p.send(tc.line)
			if got := p.next(); !strings.Contains(got, `"text":"`+tc.want+`"`) {
				t.Errorf("got %s, want the call served by the %s path", got, tc.want)
			}
		})
	}
}

// The lean path answers with the bytes the StdioServer would: results,
// tool errors and protocol errors alike.
func TestStdioLeanAnswersAsSDK(t *testing.T) {
	t.Parallel()
	lines := []string{
		call(1, "echo", "hello"),
		call(2, "missing", ""),
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":{"message":"x"},"_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"not an object"}`,
		`{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{"name":"echo"}}`,
	}
	answers := func(opts Options) []string {
		p := serveStdioPeer(t, leanServer(nil, nil), opts)
		var out []string
		for _, l := range lines {
			p.send(l)
			out = append(out, p.next())
		}
		return out
	}
	lean, sdk := answers(Options{}), answers(Options{StdioSDKDispatch: true})
	for i := range lines {
		if lean[i] != sdk[i] {
			t.Errorf("%s:\n lean path: %s\n sdk:       %s", lines[i], lean[i], sdk[i])
		}
	}
}

// With every worker busy a call is not refused or delayed behind them: it
// goes through the StdioServer.
func TestStdioLeanBusyFallsBack(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	entered := make(chan string, 4*stdioCallWorkers)
	p := serveStdioPeer(t, leanServer(entered, hold), Options{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // before p.close: the held calls must end
	// Each call takes a worker of the lean path while one is free (a call
	// the StdioServer took would hold one of its own workers until the
	// end, and the loop would go on).
	held, lean := 0, 0
	for lean < stdioCallWorkers {
		if held == 2*stdioCallWorkers {
			t.Fatalf("%d of %d held calls ran on the lean path, want %d", lean, held, stdioCallWorkers)
		}
		held++
		p.send(call(held, "echo", "hold"))
		select {
		case path := <-entered:
			if path == "lean" {
				lean++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("held call %d did not start within 10s (%d on the lean path before it)", held, lean)
		}
	}
	// With all workers holding a call, the next one is the StdioServer's.
	p.send(call(99, "path", ""))
	if got := p.next(); !strings.Contains(got, `"id":99`) || !strings.Contains(got, `"text":"sdk"`) {
		t.Errorf("call while the workers are busy: got %s, want it served by the sdk path", got)
	}
	release()
	seen := map[string]bool{}
	for range held {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		l := p.next()
		if err := json.Unmarshal([]byte(l), &m); err != nil || !strings.Contains(l, "echo: hold") {
			t.Fatalf("held call: got %s", l)
		}
		seen[string(m.ID)] = true
	}
	if len(seen) != held {
		t.Errorf("held calls answered: got ids %v, want %d distinct", seen, held)
	}
}

// A notifications/cancelled reaches a call on the lean path as it reaches
// the StdioServer's: the call's context ends.
func TestStdioLeanCallCancelled(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{{}, {StdioSDKDispatch: true}} {
		entered := make(chan string, 2)
		p := serveStdioPeer(t, leanServer(entered, nil), opts)
		p.send(call(1, "wait", ""))
		path := ""
		for _, want := range []string{"", "cancelled"} {
			select {
			case got := <-entered:
				if want != "" && got != want {
					t.Errorf("%+v: got %q, want %q", opts, got, want)
				}
				if want == "" {
					path = got
					p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"test"}}`)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%+v: the call on the %q path did not end within 10s of its cancellation", opts, path)
			}
		}
		if want := map[bool]string{false: "lean", true: "sdk"}[opts.StdioSDKDispatch]; path != want {
			t.Errorf("%+v: call ran on the %q path, want %q", opts, path, want)
		}
	}
}

// toolsCallID takes exactly the single tools/call requests.
func TestToolsCallID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`, true},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":"tools/call"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"`, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, false},
	} {
		if _, ok := toolsCallID([]byte(tc.line)); ok != tc.ok {
			t.Errorf("%s: got %v, want %v", tc.line, ok, tc.ok)
		}
	}
}
