package server

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// The lean path of a stdio tools/call (mcptransport's stdio_calls.go)
// gives what mcp-go's StdioServer gives for the same conversation: the
// same answer bytes, the same transcript records (but their times) and
// the same calls reported to the history hook. The conversation has
// results, structured results, tool errors, an unknown tool, bad
// arguments, retrieve_tools, large (lifted) arguments with a result cut
// to size, a progress token and a batch (which the lean path leaves to
// the StdioServer).
func TestStdioLeanPathMatchesSDK(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 4<<10) // 64 KiB: lifted, and its echo cut
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"call_tool","arguments":` + args + `}}`
	}
	lines := []string{
		initBody,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		call("2", `{"name":"up:echo","arguments":{"message":"<b> & c"}}`),
		call("3", `{"name":"up:add","arguments":{"a":2,"b":3}}`),
		call("4", `{"name":"up:fail","arguments":{}}`),
		call("5", `{"name":"up:nope","arguments":{}}`),
		call("6", `{"name":"up:echo","arguments":"not an object"}`),
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"retrieve_tools","arguments":{"query":"echo a message"}}}`,
		call("8", `{"name":"up:echo","arguments":{"message":"`+big+`"}}`),
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"up:echo","arguments":{"message":"p"}},"_meta":{"progressToken":"t9"}}}`,
		`[` + call("10", `{"name":"up:echo","arguments":{"message":"in a batch"}}`) + `]`,
		call(`"s"`, `{"name":"up:add","arguments":{"a":1,"b":1}}`),
	}
	type run struct {
		answers    []string
		transcript string
		calls      []Call
		// leanCalls counts the calls served on the lean path.
		leanCalls int
	}
	serve := func(opts mcptransport.Options) run {
		dir := t.TempDir()
		m := session.NewManager(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
		t.Cleanup(func() {
			if err := m.Close(); err != nil {
				t.Errorf("closing sessions: %v", err)
			}
		})
		var mu sync.Mutex
		var r run
		up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"up": newUpstreamServer()})
		s, err := New(Deps{Upstreams: up, Index: newWordIndex(), Sessions: m, OnCall: func(c Call) {
			c.Time, c.Duration = time.Time{}, 0 // differ between runs
			buf := make([]byte, 64<<10)
			lean := strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*stdioCalls).run")
			mu.Lock()
			r.calls = append(r.calls, c)
			if lean {
				r.leanCalls++
			}
			mu.Unlock()
		}}, Options{StdioSessionID: "stdio-lean-test"})
		if err != nil {
			t.Fatal(err)
		}
		c := startStdioOpts(t, s, opts)
		for _, l := range lines {
			c.send(l)
			if answered(l) {
				r.answers = append(r.answers, c.next())
			}
		}
		c.close()
		r.transcript = string(regexp.MustCompile(`"time":\d+`).ReplaceAll(onlyTranscript(t, dir), []byte(`"time":0`)))
		return r
	}
	lean, sdk := serve(mcptransport.Options{}), serve(mcptransport.Options{StdioSDKDispatch: true})
	if len(lean.answers) != len(sdk.answers) {
		t.Fatalf("got %d answers on the lean path, %d through the StdioServer", len(lean.answers), len(sdk.answers))
	}
	for i := range lean.answers {
		if lean.answers[i] != sdk.answers[i] {
			t.Errorf("answer %d:\n lean path: %.400s\n sdk:       %.400s", i, lean.answers[i], sdk.answers[i])
		}
	}
	if diff := cmp.Diff(sdk.transcript, lean.transcript); diff != "" {
		t.Errorf("transcript (-sdk +lean):\n%s", diff)
	}
	if diff := cmp.Diff(sdk.calls, lean.calls); diff != "" {
		t.Errorf("calls reported to the history (-sdk +lean):\n%s", diff)
	}
	// The conversation must exercise what it says it does.
	if lean.leanCalls == 0 || sdk.leanCalls != 0 {
		t.Errorf("calls on the lean path: got %d with it, %d without, want some and none", lean.leanCalls, sdk.leanCalls)
	}
	if n := bytes.Count([]byte(lean.transcript), []byte("\n")); n < 16 {
		t.Errorf("transcript has %d records, want the conversation's calls and results", n)
	}
	if len(lean.calls) < 7 {
		t.Errorf("history got %d calls, want every upstream call", len(lean.calls))
	}
	var shaped struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lean.answers[7]), &shaped); err != nil || len(shaped.Result.Content) < 2 || len(shaped.Result.Content[0].Text) >= len(big) {
		t.Errorf("large call: got %.300s, want its result cut to size with a ref tag", lean.answers[7])
	}
}
