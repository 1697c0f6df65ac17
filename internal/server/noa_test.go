package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/mcptransport"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// startNoaFront serves a front with noa on, over the test upstream "up", and
// returns it with its sessions directory.
func startNoaFront(t *testing.T, opts Options) (*front, string) {
	t.Helper()
	return startNoaFrontLog(t, opts, nil)
}

func startNoaFrontLog(t *testing.T, opts Options, log *zap.Logger) (*front, string) {
	t.Helper()
	return startNoaFrontWith(t, opts, log, session.Options{})
}

// startNoaFrontWith is startNoaFront with the sessions' options so (Dir, Noa
// and MaxResultTokens are the test's own).
func startNoaFrontWith(t *testing.T, opts Options, log *zap.Logger, so session.Options) (*front, string) {
	t.Helper()
	dir := t.TempDir()
	so.Dir, so.Noa, so.MaxResultTokens = dir, noa.DefaultConfig(20000), 4000
	m := session.NewManager(so)
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"up": newUpstreamServer()})
	var ix Index
	if opts.Mode != config.ModeDirect {
		ix = newWordIndex()
	}
	s, err := New(Deps{Upstreams: up, Index: ix, Sessions: m, Logger: log}, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the server stops before its sessions
	// close.
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing sessions: %v", err)
		}
	})
	return serveFront(t, s, mcptransport.HTTPOptions{}), dir
}

var refTag = regexp.MustCompile(`^\[m\d{5} · [0-9.]+K? tok\]$`)

// In retrieve mode over both HTTP transports, noa's tools are listed, its
// prompt is in the instructions, call_tool results keep the upstream's
// content and gain a ref tag, and the call is recorded under the routed
// tool's id.
func TestNoaRetrieveMode(t *testing.T) {
	for _, kind := range []string{"streamable", "sse"} {
		t.Run(kind, func(t *testing.T) {
			f, dir := startNoaFront(t, Options{})
			c := connect(t, f, kind, nil)
			want := []string{noa.CompressToolName, ToolCall, ToolDescribe, session.ReadArchiveToolName, ToolRetrieve}
			if got := toolNames(t, c); !slices.Equal(got, want) {
				t.Errorf("tools/list: got %v, want %v", got, want)
			}

			res := callTool(t, c, ToolCall, map[string]any{"name": "up:echo", "arguments": map[string]any{"message": "hi"}})
			if res.IsError || len(res.Content) != 2 {
				t.Fatalf("call_tool: got %q (isError %v, %d blocks), want the echo and a ref tag", text(res), res.IsError, len(res.Content))
			}
			if tc, _ := mcp.AsTextContent(res.Content[0]); tc == nil || tc.Text != "Echo: hi" {
				t.Errorf("first block: got %v, want the upstream's %q untouched", res.Content[0], "Echo: hi")
			}
			tag, _ := mcp.AsTextContent(res.Content[1])
			if tag == nil || !refTag.MatchString(tag.Text) {
				t.Errorf("second block: got %v, want a ref tag like [m00002 · 12 tok]", res.Content[1])
			}

			// A structured result keeps its structured content.
			res = callTool(t, c, ToolCall, map[string]any{"name": "up:add", "arguments": map[string]any{"a": 2, "b": 3}})
			if res.StructuredContent == nil {
				t.Errorf("up:add: structured content dropped: %+v", res)
			}

			// read_archive returns the original of a ref verbatim.
			ref := strings.Fields(strings.Trim(tag.Text, "[]"))[0]
			page := callTool(t, c, session.ReadArchiveToolName, map[string]any{"ref": ref})
			if tc, _ := mcp.AsTextContent(page.Content[0]); page.IsError || tc == nil || tc.Text != "Echo: hi" {
				t.Errorf("read_archive %s: got %q (isError %v), want %q", ref, text(page), page.IsError, "Echo: hi")
			}

			// Nothing to compress yet: a neutral answer, not an error.
			res = callTool(t, c, noa.CompressToolName, map[string]any{"content": []any{}})
			if res.IsError {
				t.Errorf("Compress with no ranges: got an error %q", text(res))
			}
			res = callTool(t, c, noa.CompressToolName, map[string]any{"content": []any{map[string]any{"start": "m00099", "end": "m00100", "summary": strings.Repeat("a summary of nothing ", 4)}}})
			if !res.IsError || !strings.Contains(text(res), "m00099") {
				t.Errorf("Compress of unknown refs: got %q (isError %v), want an error naming the ref", text(res), res.IsError)
			}

			tr := onlyTranscript(t, dir)
			if !bytes.Contains(tr, []byte(`"up:echo"`)) {
				t.Errorf("transcript does not record the routed tool id up:echo:\n%s", tr)
			}
		})
	}
}

func TestNoaInstructions(t *testing.T) {
	f, _ := startNoaFront(t, Options{})
	_, res := connectURL(t, f.base+mcptransport.PathStreamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	for _, want := range []string{"retrieve_tools", session.MCPInstructions()} {
		if !strings.Contains(res.Instructions, want) {
			t.Errorf("instructions: got %q, want them to contain %q", res.Instructions, want)
		}
	}
}

// In direct mode noa's tools sit beside the upstream tools, direct calls are
// tagged, and they are recorded under the routed tool id as in retrieve
// mode.
func TestNoaDirectMode(t *testing.T) {
	f, dir := startNoaFront(t, Options{Mode: config.ModeDirect})
	c := connect(t, f, "streamable", nil)
	names := toolNames(t, c)
	for _, want := range []string{noa.CompressToolName, session.ReadArchiveToolName, "up__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list: got %v, want it to contain %s", names, want)
		}
	}
	res := callTool(t, c, "up__echo", map[string]any{"message": "d"})
	if got := text(res); res.IsError || !strings.HasPrefix(got, "Echo: d\n[m00002 ") {
		t.Errorf("up__echo: got %q, want the echo and its ref tag", got)
	}
	tr, err := os.ReadFile(filepath.Join(dir, c.GetSessionId(), "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(tr, []byte(`"up:echo"`)) || bytes.Contains(tr, []byte(`"up__echo"`)) {
		t.Errorf("transcript: want the direct call recorded as up:echo, not up__echo:\n%s", tr)
	}
}

// A client of the stateless 2026-07-28 protocol has no session to key a
// host on: its calls pass through untagged, and Compress says why it
// cannot run rather than pretending.
func TestNoaStatelessClientPassesThrough(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	f, dir := startNoaFrontLog(t, Options{}, zap.New(core))
	c := connectVersion(t, f, "streamable", mcp.LATEST_PROTOCOL_VERSION, nil)
	for range 2 {
		res := callTool(t, c, ToolCall, map[string]any{"name": "up:echo", "arguments": map[string]any{"message": "hi"}})
		if got := text(res); got != "Echo: hi" {
			t.Errorf("call_tool: got %q, want the upstream's result only", got)
		}
	}
	if n := logs.FilterMessageSnippet("without a session id").Len(); n != 1 {
		t.Errorf("got %d log lines about clients without a session, want exactly 1", n)
	}
	res := callTool(t, c, noa.CompressToolName, map[string]any{"content": []any{}})
	if !res.IsError || !strings.Contains(text(res), "no session") {
		t.Errorf("Compress: got %q (isError %v), want an error saying there is no session", text(res), res.IsError)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("got %d session directories, want none", len(entries))
	}
}

// When a client's session ends its host is closed, which brings state.json
// up to date with the transcript.
func TestNoaReleasesEndedSession(t *testing.T) {
	f, dir := startNoaFront(t, Options{})
	c := connect(t, f, "streamable", nil)
	callTool(t, c, ToolCall, map[string]any{"name": "up:echo", "arguments": map[string]any{"message": "hi"}})
	id := c.GetSessionId()
	opts := session.Options{Dir: dir, Noa: noa.DefaultConfig(20000)}
	stateFile := func() session.StateStatus {
		in, err := session.Inspect(opts, id)
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		return in.StateFile
	}
	if got := stateFile(); got.Check == session.StateCurrent {
		t.Fatalf("state.json while the session is open: got %+v, want it not yet current (written every %d calls)", got, session.DefaultStateEvery)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := stateFile()
		if got.Check == session.StateCurrent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("state.json 10s after the client left: got %+v, want current (the host released and closed)", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A retrieve_tools or describe_tool call costs its session one append (the
// call and its result, paired) and no noa turn: the result comes back as
// the meta tool gave it, with no ref tag or nudge.
func TestNoaMetaCallsAppendOnly(t *testing.T) {
	f, dir := startNoaFront(t, Options{})
	c := connect(t, f, "streamable", nil)
	res := callTool(t, c, ToolRetrieve, map[string]any{"query": "echo"})
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("retrieve_tools: %q (isError %v)", text(res), res.IsError)
	}
	for _, block := range res.Content {
		if tc, _ := mcp.AsTextContent(block); tc != nil && refTag.MatchString(tc.Text) {
			t.Errorf("retrieve_tools came back with a ref tag %q; a meta call runs no turn", tc.Text)
		}
	}
	tr := onlyTranscript(t, dir)
	type rec struct {
		Seq     int64           `json:"seq"`
		Time    int64           `json:"time"`
		Pacing  json.RawMessage `json:"pacing"`
		Message struct {
			Type   string `json:"type"`
			Tool   string `json:"tool"`
			CallID string `json:"call_id"`
		} `json:"message"`
	}
	var recs []rec
	for _, line := range bytes.Split(bytes.TrimSpace(tr), []byte("\n")) {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 2 || recs[0].Message.Type != string(noa.CTToolCall) || recs[1].Message.Type != string(noa.CTToolResult) ||
		recs[0].Message.Tool != ToolRetrieve || recs[1].Message.CallID == "" || recs[1].Message.CallID != recs[0].Message.CallID {
		t.Fatalf("transcript: got %+v, want the retrieve_tools call and its paired result", recs)
	}
	if recs[1].Pacing != nil {
		t.Errorf("the meta call's result carries pacing %s: a noa turn ran", recs[1].Pacing)
	}
}

// onlyTranscript is the records of the transcript of the one session
// under dir (an open session's file ends in a zeroed reserve:
// internal/session/trfile.go).
func onlyTranscript(t *testing.T, dir string) []byte {
	t.Helper()
	sessions, _ := os.ReadDir(dir)
	if len(sessions) != 1 {
		t.Fatalf("got %d session directories, want 1", len(sessions))
	}
	tr, err := os.ReadFile(filepath.Join(dir, sessions[0].Name(), session.TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(tr, 0); i >= 0 {
		tr = tr[:i]
	}
	return tr
}

// With NoaRecallOnly (noa.mcp "recall": the agent's model requests go through
// the gateway, which compresses) the MCP side keeps its size cuts and
// read_archive but offers no Compress, says nothing of compression in its
// instructions, and adds no ref tag or nudge; the same calls in full mode
// do get a nudge, so the absence is not for lack of pressure.
func TestNoaRecallOnly(t *testing.T) {
	big := strings.Repeat("a line of a long log file, with words in it. ", 700) // ~32K bytes: cut at 4000 tokens
	nudged := func(so session.Options) (c *client.Client, names []string, instructions string, results []*mcp.CallToolResult) {
		f, _ := startNoaFrontWith(t, Options{}, nil, so)
		c, res := connectURL(t, f.base+mcptransport.PathStreamable, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		for i := 0; i < 8; i++ {
			results = append(results, callTool(t, c, ToolCall, map[string]any{"name": "up:echo", "arguments": map[string]any{"message": fmt.Sprint(i, " ", big)}}))
		}
		return c, toolNames(t, c), res.Instructions, results
	}
	hasNudge := func(results []*mcp.CallToolResult) bool {
		for _, r := range results {
			for _, s := range textBlocks(r) {
				if strings.HasPrefix(s, "[noa]") {
					return true
				}
			}
		}
		return false
	}
	if _, _, _, full := nudged(session.Options{}); !hasNudge(full) {
		t.Fatalf("full mode: eight cut results gave no nudge; the recall-only check below would prove nothing")
	}

	c, names, instructions, results := nudged(session.Options{RecallOnly: true})
	if want := []string{ToolCall, ToolDescribe, session.ReadResultToolName, ToolRetrieve}; !slices.Equal(names, want) {
		t.Errorf("tools/list: got %v, want %v (no Compress; recall under its own name, apart from the gateway's read_archive)", names, want)
	}
	if strings.Contains(instructions, noa.SystemPromptHeader) {
		t.Errorf("instructions carry noa's compression prompt: %q", instructions)
	}
	if hasNudge(results) {
		t.Errorf("a result carries a nudge")
	}
	for i, r := range results {
		blocks := textBlocks(r)
		if len(blocks) != 1 || refTag.MatchString(blocks[len(blocks)-1]) {
			t.Fatalf("result %d: got blocks %q, want the cut text alone, no ref tag", i, blocks)
		}
		m := regexp.MustCompile(`read_result \{"ref":"(m\d+)"`).FindStringSubmatch(blocks[0])
		if !strings.Contains(blocks[0], noa.TruncationMarker) || m == nil {
			t.Fatalf("result %d is not cut with a pointer to its original through read_result: %.200q", i, blocks[0])
		}
		if i > 0 {
			continue
		}
		page := callTool(t, c, session.ReadResultToolName, map[string]any{"ref": m[1]})
		if got := textBlocks(page); page.IsError || len(got) == 0 || !strings.HasPrefix("Echo: 0 "+big, got[0]) || !strings.Contains(got[1], `more follows: read_result {"ref":"`+m[1]+`"`) {
			t.Errorf("read_result %s: got %.200q (isError %v), want the original's first page", m[1], got, page.IsError)
		}
	}
}

// A call is recorded with its arguments as the client sent them (issue 28):
// its key order and characters, not the decoded map encoded again (sorted,
// with <, > and & escaped).
func TestCallRecordedAsClientSent(t *testing.T) {
	dir := t.TempDir()
	m := session.NewManager(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing sessions: %v", err)
		}
	})
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"up": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex(), Sessions: m}, Options{StdioSessionID: session.NewSessionID(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, s)
	c.send(initBody)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const args = `{"name":"up:echo","arguments":{"message":"<b> & c"}}`
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":` + args + `}}`)
	if got := c.next(); !strings.Contains(got, `"id":2,"result"`) || strings.Contains(got, `"isError":true`) {
		t.Fatalf("the call: got %s", got)
	}
	var calls []string
	for _, line := range bytes.Split(bytes.TrimSpace(onlyTranscript(t, dir)), []byte("\n")) {
		var r struct {
			Message struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"message"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Message.Type == string(noa.CTToolCall) {
			calls = append(calls, r.Message.Text)
		}
	}
	if len(calls) != 1 || calls[0] != args {
		t.Errorf("recorded tool calls: got %q, want the client's %q", calls, args)
	}
	c.close()
}

// TestDirectPrefixCannotTakeMcproxysTools serves an upstream with prefix ""
// and a tool named Compress, the name of noa's own tool: mcproxy's stays,
// the upstream's is withheld and the log says so.
func TestDirectPrefixCannotTakeMcproxysTools(t *testing.T) {
	m := session.NewManager(session.Options{Dir: t.TempDir(), Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
	srv := newUpstreamServer()
	srv.AddTool(mcp.NewTool("Compress", mcp.WithDescription("The upstream's own Compress.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("upstream compress"), nil
		})
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"up": srv})
	core, logs := observer.New(zap.WarnLevel)
	s, err := New(Deps{Upstreams: up, Sessions: m, Logger: zap.New(core)},
		Options{Mode: config.ModeDirect, Prefix: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	f := serveFront(t, s, mcptransport.HTTPOptions{})
	c := connect(t, f, "streamable", nil)
	names := toolNames(t, c)
	if !slices.Contains(names, "echo") || !slices.Contains(names, "Compress") {
		t.Fatalf("tools/list: got %v, want the upstream's echo under its own name beside noa's Compress", names)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "Compress" && strings.Contains(tl.Description, "upstream's own") {
			t.Errorf("Compress: got the upstream's definition, want mcproxy's")
		}
	}
	if logs.FilterMessageSnippet(`tool "Compress" of server "up" collides`).Len() == 0 {
		t.Errorf("no collision logged for the upstream's Compress; got %v", logs.All())
	}
}
