package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

func TestRetrieveModeOverTransports(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})

	for _, tc := range []struct{ kind, version string }{
		{"streamable", mcp.LATEST_LEGACY_PROTOCOL_VERSION},
		{"streamable", ""}, // the newest protocol (stateless, server/discover)
		{"sse", mcp.LATEST_LEGACY_PROTOCOL_VERSION},
		{"inprocess", mcp.LATEST_LEGACY_PROTOCOL_VERSION},
	} {
		name := tc.kind + "/" + tc.version
		if tc.version == "" {
			name = tc.kind + "/latest"
		}
		t.Run(name, func(t *testing.T) {
			c := connectVersion(t, f, tc.kind, tc.version, nil)
			if want := tc.version; want != "" && c.ProtocolVersion() != want {
				t.Fatalf("negotiated protocol: got %q, want %q", c.ProtocolVersion(), want)
			} else if want == "" && !mcp.IsModernProtocol(c.ProtocolVersion()) {
				t.Fatalf("negotiated protocol: got %q, want the stateless one (%s or later)", c.ProtocolVersion(), mcp.ProtocolVersion20260728)
			}

			if got, want := toolNames(t, c), []string{ToolCall, ToolDescribe, ToolRetrieve}; !cmp.Equal(got, want) {
				t.Fatalf("tools/list: got %v, want %v", got, want)
			}

			res := callTool(t, c, ToolRetrieve, map[string]any{"query": "read the contents of a file"})
			if res.IsError {
				t.Fatalf("retrieve_tools: isError: %s", text(res))
			}
			first, _, _ := strings.Cut(text(res), "\n")
			if !strings.HasPrefix(first, "test:read_file(head?: number, path: string) ") {
				t.Errorf("retrieve_tools first line: got %q, want test:read_file with its signature", first)
			}

			res = callTool(t, c, ToolCall, map[string]any{"name": "test:echo", "arguments": map[string]any{"message": "hi there"}})
			if res.IsError || text(res) != "Echo: hi there" {
				t.Errorf("call_tool echo: got %q (isError %v), want %q", text(res), res.IsError, "Echo: hi there")
			}

			res = callTool(t, c, ToolCall, map[string]any{"name": "test:add", "arguments": map[string]any{"a": 2, "b": 3}})
			got, _ := json.Marshal(res.StructuredContent)
			if res.IsError || string(got) != `{"sum":5}` || text(res) != "5" {
				t.Errorf("call_tool add: got structured %s text %q isError %v, want {\"sum\":5}, \"5\", false", got, text(res), res.IsError)
			}

			res = callTool(t, c, ToolCall, map[string]any{"name": "test:fail"})
			if !res.IsError || text(res) != "boom: the disk is on fire" {
				t.Errorf("call_tool fail: got %q isError %v, want the upstream's own error text with isError", text(res), res.IsError)
			}
		})
	}
}

func TestCallToolErrors(t *testing.T) {
	testSrv := newUpstreamServer()
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": testSrv, "other": newUpstreamServer()})
	up.timeout = 200 * time.Millisecond
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	c := connect(t, f, "streamable", nil)
	// The upstream drops a tool the catalog still lists: its call comes back
	// as a JSON-RPC invalid-params error.
	testSrv.DeleteTools("fail")

	tests := []struct {
		name string
		args map[string]any
		want []string // substrings of the tool error
	}{
		{"typo in tool", map[string]any{"name": "test:ecko"}, []string{`Unknown tool "test:ecko"`, "Closest matches: test:echo", "retrieve_tools"}},
		{"unknown server", map[string]any{"name": "nope:echo"}, []string{`Unknown tool "nope:echo"`, "other:echo, test:echo", "retrieve_tools"}},
		{"no server part", map[string]any{"name": "echo"}, []string{`Unknown tool "echo"`, "other:echo, test:echo", `"server:tool"`}},
		{"missing name", map[string]any{}, []string{`call_tool needs "name"`}},
		{"arguments not an object", map[string]any{"name": "test:echo", "arguments": []any{1}}, []string{"Bad arguments for test:echo", `"arguments" is an array`, `"message"`}},
		{"rejected upstream", map[string]any{"name": "test:fail", "arguments": map[string]any{"x": 1}}, []string{"test:fail rejected the call as invalid", "not found", "Check the arguments", `input schema: {`}},
		{"timeout", map[string]any{"name": "test:sleep", "arguments": map[string]any{"ms": 5000}}, []string{"test:sleep timed out after 200ms", "call_timeout", "mcpServers.test.call_timeout"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := callTool(t, c, ToolCall, tc.args)
			if !res.IsError {
				t.Fatalf("got a success %q, want a tool error", text(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("got %q, want it to contain %q", text(res), w)
				}
			}
		})
	}

	t.Run("string arguments are accepted", func(t *testing.T) {
		res := callTool(t, c, ToolCall, map[string]any{"name": "test:echo", "arguments": `{"message":"x"}`})
		if res.IsError || text(res) != "Echo: x" {
			t.Errorf("got %q (isError %v), want %q", text(res), res.IsError, "Echo: x")
		}
	})

	t.Run("server down", func(t *testing.T) {
		retry := time.Now().Add(30 * time.Second)
		up.mu.Lock()
		up.down["other"] = &upstream.DownError{Server: "other", State: upstream.StateDown, LastError: "process exited: signal: killed", RetryAt: retry}
		up.mu.Unlock()
		f.ToolsChanged("other", nil)
		t.Cleanup(func() {
			up.mu.Lock()
			delete(up.down, "other")
			up.mu.Unlock()
			f.ToolsChanged("other", up.serverTools("other"))
		})
		res := callTool(t, c, ToolCall, map[string]any{"name": "other:echo", "arguments": map[string]any{"message": "x"}})
		for _, w := range []string{`Server "other" is unavailable (state: down)`, "process exited: signal: killed", retry.UTC().Format("15:04:05 UTC"), "Tools of other servers still work"} {
			if !strings.Contains(text(res), w) || !res.IsError {
				t.Errorf("got %q (isError %v), want a tool error containing %q", text(res), res.IsError, w)
			}
		}
		// The other server keeps working.
		res = callTool(t, c, ToolCall, map[string]any{"name": "test:echo", "arguments": map[string]any{"message": "still"}})
		if text(res) != "Echo: still" {
			t.Errorf("healthy server: got %q, want %q", text(res), "Echo: still")
		}
		// Its tools leave retrieve_tools while it is down.
		res = callTool(t, c, ToolRetrieve, map[string]any{"query": "echo a message", "limit": 10})
		if strings.Contains(text(res), "other:") {
			t.Errorf("retrieve_tools while other is down: got %q, want no other: tools", text(res))
		}
	})
}

func TestRetrieveArguments(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{RetrieveLimit: 2}, mcptransport.HTTPOptions{})
	c := connect(t, f, "inprocess", nil)

	res := callTool(t, c, ToolRetrieve, map[string]any{"query": "a the file message numbers"})
	if n := len(strings.Split(text(res), "\n")); n != 2 {
		t.Errorf("default limit: got %d lines, want 2:\n%s", n, text(res))
	}
	res = callTool(t, c, ToolRetrieve, map[string]any{"query": "a the file message numbers", "limit": 3})
	if n := len(strings.Split(text(res), "\n")); n != 3 {
		t.Errorf("limit 3: got %d lines, want 3:\n%s", n, text(res))
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "  "}, `needs a non-empty "query"`},
		{map[string]any{"query": "file", "limit": 0}, `"limit" must be a whole number from 1 to 50 (got 0)`},
		{map[string]any{"query": "file", "limit": 2.5}, `(got 2.5)`},
		{map[string]any{"query": "file", "limit": "3"}, `(got "3")`},
	} {
		res := callTool(t, c, ToolRetrieve, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("retrieve_tools %v: got %q (isError %v), want a tool error containing %q", tc.args, text(res), res.IsError, tc.want)
		}
	}
	res = callTool(t, c, ToolRetrieve, map[string]any{"query": "zebra"})
	if res.IsError || !strings.Contains(text(res), `No tools match "zebra"`) {
		t.Errorf("no match: got %q, want a plain answer saying nothing matched", text(res))
	}
}

func TestDescribeTool(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	c := connect(t, f, "inprocess", nil)

	res := callTool(t, c, ToolDescribe, map[string]any{"names": []any{"test:echo", "test:nope"}})
	if res.IsError {
		t.Fatalf("describe_tool: isError: %s", text(res))
	}
	var got []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Error       string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatalf("describe_tool answer is not JSON: %v\n%s", err, text(res))
	}
	if len(got) != 2 {
		t.Fatalf("got %d entries, want 2", len(got))
	}
	wantSchema, _ := json.Marshal(mustTool(t, up, "test", "echo").InputSchema)
	if got[0].Name != "test:echo" || got[0].Description != "Echo a message back unchanged." || string(got[0].InputSchema) != string(wantSchema) {
		t.Errorf("test:echo: got %+v, want its description and schema %s", got[0], wantSchema)
	}
	if got[1].Name != "test:nope" || !strings.Contains(got[1].Error, "Unknown tool") {
		t.Errorf("test:nope: got %+v, want an unknown-tool error", got[1])
	}

	res = callTool(t, c, ToolDescribe, map[string]any{"names": []any{}})
	if !res.IsError {
		t.Errorf("empty names: got %q, want a tool error", text(res))
	}
}

func mustTool(t *testing.T, up *testUpstreams, server, name string) mcp.Tool {
	t.Helper()
	tl, ok := up.MCPTool(server, name)
	if !ok {
		t.Fatalf("no tool %s:%s", server, name)
	}
	return tl
}

func TestRetrieveSeesChangedTools(t *testing.T) {
	upSrv := newUpstreamServer()
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": upSrv})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{})
	c := connect(t, f, "inprocess", nil)

	upSrv.AddTool(mcp.NewTool("translate", mcp.WithDescription("Translate text into another language.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("hola"), nil
		})
	if err := up.refresh(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	f.ToolsChanged("test", up.serverTools("test"))

	res := callTool(t, c, ToolRetrieve, map[string]any{"query": "translate text"})
	if !strings.HasPrefix(text(res), "test:translate() ") {
		t.Errorf("retrieve after change: got %q, want test:translate first", text(res))
	}
	res = callTool(t, c, ToolCall, map[string]any{"name": "test:translate"})
	if text(res) != "hola" {
		t.Errorf("call new tool: got %q, want %q", text(res), "hola")
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	up := &testUpstreams{}
	for _, tc := range []struct {
		name string
		deps Deps
		opts Options
		want string
	}{
		{"no upstreams", Deps{Index: newWordIndex()}, Options{}, "Upstreams is required"},
		{"retrieve without index", Deps{Upstreams: up}, Options{}, "retrieve mode needs an Index"},
		{"bad mode", Deps{Upstreams: up, Index: newWordIndex()}, Options{Mode: "fast"}, `mode "fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.deps, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestWaitForStart(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{WaitForStart: true})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, &front{Server: s}, "inprocess", nil)

	// Before Started, a call waits; it can only end by its own deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = ToolRetrieve
	req.Params.Arguments = map[string]any{"query": "echo a message"}
	if res, err := c.CallTool(ctx, req); err == nil {
		t.Fatalf("got %q before Started, want the call held until its deadline", text(res))
	}

	// A call made while upstreams connect sees the tools that arrive before
	// Started.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Errorf("retrieve_tools: %v", err)
		}
		done <- res
	}()
	s.Resync()
	s.Started()
	s.Started() // idempotent
	res := <-done
	if res == nil || !strings.HasPrefix(text(res), "test:echo(") {
		t.Errorf("retrieve_tools after Started: got %v, want test:echo first", res)
	}
}
