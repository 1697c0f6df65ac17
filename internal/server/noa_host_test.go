package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// The tests in this file drive noaFront (noa.go) directly and through a
// bare mcp-go server wired the way New wires it, with small-window hosts
// whose nudges start after a few thousand tokens of tool traffic.

func hostOptions(t testing.TB) session.Options {
	return session.Options{Dir: t.TempDir(), Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000, StateEvery: 1}
}

func openTestHost(t testing.TB, opts session.Options, id string) *session.Host {
	t.Helper()
	h, err := session.Open(opts, id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// textBlocks are the text blocks of a result.
func textBlocks(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// nudgeOf returns the nudge block of a result, or "".
func nudgeOf(res *mcp.CallToolResult) string {
	for _, s := range textBlocks(res) {
		if strings.HasPrefix(s, "[noa]") {
			return s
		}
	}
	return ""
}

var nudgeRange = regexp.MustCompile(`(m\d{5})–(m\d{5})\s+compressible`)

// compressArguments answers a nudge: a summary for every compressible
// range it recommends.
func compressArguments(nudge string) map[string]any {
	var items []any
	for _, m := range nudgeRange.FindAllStringSubmatch(nudge, -1) {
		items = append(items, map[string]any{"start": m[1], "end": m[2], "topic": "data reads",
			"summary": fmt.Sprintf("Read the data files between %s and %s; facts extracted: alpha and bravo are set, the retry loop in internal/session/host.go:212 is fine. TASK AS OF THIS BLOCK: continue with the cache.", m[1], m[2])})
	}
	return map[string]any{"content": items}
}

// newMCPFront is an mcp-go server wired the way New wires a Manager: the
// recording middleware, Compress and read_archive, noa's instructions, and
// hosts released when a client session ends. Its one ordinary tool,
// "bulky", returns deterministic prose of the requested size tagged with
// the caller's marker.
func newMCPFront(t *testing.T, m *session.Manager) string {
	t.Helper()
	hooks := &mcpserver.Hooks{}
	hooks.AddOnUnregisterSession(func(ctx context.Context, s mcpserver.ClientSession) { m.Release(sessionIDFor(s, "stdio-test")) })
	nf := &noaFront{sessions: m, idOf: clientSessionID("stdio-test"), nameOf: recordedToolName, log: zap.NewNop()}
	srv := mcpserver.NewMCPServer("front", "test",
		mcpserver.WithToolCapabilities(false),
		mcpserver.WithInstructions(session.MCPInstructions()),
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolHandlerMiddleware(nf.middleware),
	)
	srv.AddTool(mcp.NewTool("bulky", mcp.WithString("marker"), mcp.WithNumber("words"), mcp.WithNumber("seed")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			marker := req.GetString("marker", "")
			n := req.GetInt("words", 100)
			seed := req.GetInt("seed", 1)
			return mcp.NewToolResultText(marker + " " + testenv.Prose(rand.New(rand.NewSource(int64(seed))), n)), nil
		})
	srv.AddTool(compressTool(), nf.compress)
	srv.AddTool(readArchiveTool(), nf.readArchive)
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func connectURL(t *testing.T, url, version string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: version, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, init
}

// Two clients of one proxy, working at the same time over streamable HTTP,
// each get their own refs, blocks and archives: neither sees the other's.
func TestMCPClientsIsolated(t *testing.T) {
	opts := hostOptions(t)
	m := session.NewManager(opts)
	t.Cleanup(func() { m.Close() })
	url := newMCPFront(t, m)

	type outcome struct {
		marker, block, archive string
		firstTag               string
	}
	results := make([]outcome, 2)
	var wg sync.WaitGroup
	for i := range results {
		c, init := connectURL(t, url, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		if !strings.Contains(init.Instructions, session.MCPInstructions()) {
			t.Fatalf("initialize instructions lack noa's prompt: %q", init.Instructions)
		}
		wg.Add(1)
		go func(i int, c *client.Client) {
			defer wg.Done()
			marker := fmt.Sprintf("CLIENT-%d-MARKER", i)
			o := &results[i]
			o.marker = marker
			for j := 0; j < 200; j++ {
				res := callTool(t, c, "bulky", map[string]any{"marker": marker, "words": 900, "seed": j})
				tx := textBlocks(res)
				if j == 0 {
					o.firstTag = tx[1]
				}
				if !strings.HasPrefix(tx[0], marker) {
					t.Errorf("client %d got another client's result", i)
					return
				}
				n := nudgeOf(res)
				if n == "" {
					continue
				}
				out := callTool(t, c, noa.CompressToolName, compressArguments(n))
				if out.IsError {
					t.Errorf("client %d Compress: %q", i, textBlocks(out))
					return
				}
				o.block = "b1"
				page := callTool(t, c, session.ReadArchiveToolName, map[string]any{"block": "b1"})
				o.archive = textBlocks(page)[0]
				return
			}
			t.Errorf("client %d never got a nudge", i)
		}(i, c)
	}
	wg.Wait()
	for i, o := range results {
		if o.firstTag == "" || !strings.HasPrefix(o.firstTag, "[m00002 ") {
			t.Errorf("client %d: first tag %q, want its own numbering from m00002", i, o.firstTag)
		}
		other := results[1-i].marker
		if !strings.Contains(o.archive, o.marker) || strings.Contains(o.archive, other) {
			t.Errorf("client %d's archive b1: has own marker %v, has the other's %v; want only its own",
				i, strings.Contains(o.archive, o.marker), strings.Contains(o.archive, other))
		}
	}
	// Two session directories, each with its own transcript and archive.
	dirs, _ := os.ReadDir(opts.Dir)
	if len(dirs) != 2 {
		t.Fatalf("got %d session directories, want 2", len(dirs))
	}
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(opts.Dir, d.Name(), session.TranscriptFile))
		has0, has1 := strings.Contains(string(b), results[0].marker), strings.Contains(string(b), results[1].marker)
		if has0 == has1 {
			t.Errorf("transcript of %s holds markers of client 0: %v, client 1: %v; want exactly one", d.Name(), has0, has1)
		}
	}
}

// A request of the 2026-07-28 protocol has no session (each request is its
// own ephemeral session in mcp-go), so there is nothing to key a host on:
// the call passes through unrecorded rather than mixing clients.
func TestModernProtocolRequestPassesThrough(t *testing.T) {
	m := session.NewManager(hostOptions(t))
	t.Cleanup(func() { m.Close() })
	c, _ := connectURL(t, newMCPFront(t, m), mcp.LATEST_PROTOCOL_VERSION)
	res := callTool(t, c, "bulky", map[string]any{"marker": "M", "words": 10})
	if got := len(res.Content); got != 1 {
		t.Errorf("got %d content blocks, want 1 (passed through, no ref tag)", got)
	}
}

// Over stdio (mcp-go's constant session id "stdio") the host is keyed on the
// id this run was given.
func TestStdioSessionID(t *testing.T) {
	opts := hostOptions(t)
	m := session.NewManager(opts)
	t.Cleanup(func() { m.Close() })
	stdioID := session.NewSessionID(time.Now())
	nf := &noaFront{sessions: m, idOf: clientSessionID(stdioID), nameOf: recordedToolName, log: zap.NewNop()}
	srv := mcpserver.NewMCPServer("front", "test", mcpserver.WithToolHandlerMiddleware(nf.middleware))
	srv.AddTool(mcp.NewTool("echo"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echoed"), nil
	})
	srvIn, cliOut := io.Pipe()
	cliIn, srvOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mcpserver.NewStdioServer(srv).Listen(ctx, srvIn, srvOut) }()
	t.Cleanup(func() {
		cancel()
		cliOut.Close()
		srvOut.Close()
		<-done
	})
	c := client.NewClient(transport.NewIO(cliIn, cliOut, io.NopCloser(strings.NewReader(""))))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, c, "echo", nil)
	if tx := textBlocks(res); len(tx) != 2 || !strings.HasPrefix(tx[1], "[m00002 ") {
		t.Fatalf("got %q, want the result and its ref tag", tx)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, stdioID, session.TranscriptFile)); err != nil {
		t.Errorf("no transcript for the stdio session %s: %v", stdioID, err)
	}
}

// transcriptRecord is the part of a transcript record the tests read.
type transcriptRecord struct {
	Message struct {
		ID      string `json:"id"`
		IsError bool   `json:"is_error"`
	} `json:"message"`
}

// transcriptRecords reads a session's transcript, up to its zeroed
// reserve (the session is open; internal/session/trfile.go).
func transcriptRecords(t *testing.T, h *session.Host) []transcriptRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(h.Dir(), session.TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []transcriptRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if bytes.IndexByte(sc.Bytes(), 0) >= 0 {
			break
		}
		var r transcriptRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCallRecordsAndShapes(t *testing.T) {
	png := base64.StdEncoding.EncodeToString(make([]byte, 3000))
	wav := base64.StdEncoding.EncodeToString(make([]byte, 70000))
	tests := []struct {
		name     string
		res      *mcp.CallToolResult
		err      error
		wantText string // recorded result text
		wantErr  bool   // recorded as an error
	}{
		{name: "text", res: mcp.NewToolResultText("hello world"), wantText: "hello world"},
		{name: "text blocks joined", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("one"), mcp.NewTextContent("two")}}, wantText: "one\ntwo"},
		{name: "image placeholder", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("see:"), mcp.NewImageContent(png, "image/png")}}, wantText: "see:\n[image, image/png, 2.9 KiB]"},
		{name: "audio placeholder", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewAudioContent(wav, "audio/wav")}}, wantText: "[audio, audio/wav, 68.4 KiB]"},
		{name: "text resource placeholder", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: strings.Repeat("x", 2048)})}}, wantText: "[resource file:///a.txt, text/plain, 2.0 KiB]"},
		{name: "blob resource placeholder", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.BlobResourceContents{URI: "file:///b.bin", Blob: png})}}, wantText: "[resource file:///b.bin, unknown type, 2.9 KiB]"},
		{name: "resource link", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewResourceLink("file:///c", "c", "", "")}}, wantText: "[resource link file:///c]"},
		{name: "structured only", res: &mcp.CallToolResult{StructuredContent: map[string]any{"b": 1, "a": "x"}}, wantText: `{"a":"x","b":1}`},
		{name: "tool error", res: &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("no such file")}, IsError: true}, wantText: "no such file", wantErr: true},
		{name: "nil result", res: nil, wantText: ""},
		{name: "go error", err: errors.New("upstream fs is down"), wantText: "[error] upstream fs is down", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := openTestHost(t, hostOptions(t), "s")
			var before *mcp.CallToolResult
			if tc.res != nil {
				c := *tc.res
				c.Content = append([]mcp.Content(nil), tc.res.Content...)
				before = &c
			}
			nf := &noaFront{log: zap.NewNop()}
			got, err := nf.call(context.Background(), h, "fs:read", session.ArgumentsText(json.RawMessage(`{ "path" : "/a" }`)), true, func(context.Context) (*mcp.CallToolResult, error) {
				return tc.res, tc.err
			})
			if !errors.Is(err, tc.err) {
				t.Fatalf("got error %v, want %v", err, tc.err)
			}
			if tc.res != nil {
				if diff := cmp.Diff(before, tc.res); diff != "" {
					t.Errorf("the upstream's result was modified (-before +after):\n%s", diff)
				}
			}
			msgs := h.Messages()
			want := []noa.CoreMessage{
				{ID: "msg000001", Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "fs:read", ToolCallID: "call000001", Text: `{"path":"/a"}`},
				{ID: "msg000002", Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "fs:read", ToolCallID: "call000001", Text: tc.wantText},
			}
			if diff := cmp.Diff(want, msgs); diff != "" {
				t.Errorf("recorded messages (-want +got):\n%s", diff)
			}
			recs := transcriptRecords(t, h)
			if len(recs) != 2 || recs[1].Message.IsError != tc.wantErr {
				t.Fatalf("got %d records (result is_error %v), want 2 records with is_error %v", len(recs), recs[len(recs)-1].Message.IsError, tc.wantErr)
			}
			if tc.err != nil {
				if got != nil {
					t.Errorf("got result %v with a Go error, want nil", got)
				}
				return
			}
			st := h.State()
			ref, ok := noa.RefForRaw(st.MessageRefs, "msg000002")
			if !ok || ref != "m00002" {
				t.Fatalf("result ref: got %q, %v; want m00002", ref, ok)
			}
			wantContent := 1
			if tc.res != nil {
				wantContent = len(tc.res.Content) + 1
			}
			if len(got.Content) != wantContent {
				t.Fatalf("got %d content blocks, want %d (upstream's + ref tag)", len(got.Content), wantContent)
			}
			tag := got.Content[len(got.Content)-1].(mcp.TextContent).Text
			if want := noa.FormatRefTag("m00002", st.TokenSnapshot["m00002"]); tag != want {
				t.Errorf("got tag %q, want %q", tag, want)
			}
			if tc.res != nil && got.IsError != tc.res.IsError {
				t.Errorf("got IsError %v, want the upstream's %v", got.IsError, tc.res.IsError)
			}
		})
	}
}

// A nudge arrives as an extra block after the content and the ref tag.
func TestNudgeBlockOrder(t *testing.T) {
	h := openTestHost(t, hostOptions(t), "s")
	nf := &noaFront{log: zap.NewNop()}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 200; i++ {
		text := testenv.Prose(rng, 900)
		res, err := nf.call(context.Background(), h, fmt.Sprintf("fs:read_%d", i), session.ArgumentsText(nil), true, func(context.Context) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(text), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		nudge := nudgeOf(res)
		if nudge == "" {
			continue
		}
		got := textBlocks(res)
		if len(got) != 3 || got[0] != text || got[2] != nudge || !refTag.MatchString(got[1]) {
			t.Fatalf("got %d blocks, want the content, the ref tag, then the nudge", len(got))
		}
		return
	}
	t.Fatal("no nudge after 200 bulky calls")
}

// A result above MaxResultTokens comes back with its text blocks replaced
// by the cut text the session recorded, its other blocks kept, its
// structured copy dropped, and the ref tag naming the ref its pointer
// names; the upstream's result is not modified.
func TestOversizeResultShaped(t *testing.T) {
	counter, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	opts := hostOptions(t)
	opts.Count = counter.Count
	opts.MaxResultTokens = 1000
	h := openTestHost(t, opts, "s")
	nf := &noaFront{log: zap.NewNop()}
	run := func(res *mcp.CallToolResult) func(context.Context) (*mcp.CallToolResult, error) {
		return func(context.Context) (*mcp.CallToolResult, error) { return res, nil }
	}
	if _, err := nf.call(context.Background(), h, "fs:small", session.ArgumentsText(nil), true, run(mcp.NewToolResultText("first"))); err != nil {
		t.Fatal(err)
	}
	original := testenv.Prose(rand.New(rand.NewSource(3)), 12000) + "\nlast line ünïcödé ✓"
	image := mcp.NewImageContent(base64.StdEncoding.EncodeToString(make([]byte, 300)), "image/png")
	upstream := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(original), image}, StructuredContent: map[string]any{"text": original}}
	res, err := nf.call(context.Background(), h, "fs:read_big", session.ArgumentsText(nil), true, run(upstream))
	if err != nil {
		t.Fatal(err)
	}
	if upstream.StructuredContent == nil || len(upstream.Content) != 2 {
		t.Errorf("the upstream's result was modified")
	}
	tx := textBlocks(res)
	if len(tx) != 2 {
		t.Fatalf("got %d text blocks, want the cut text and the tag", len(tx))
	}
	cut := tx[0]
	if n := counter.Count(cut); n > opts.MaxResultTokens {
		t.Errorf("cut result has %d tokens, want at most %d", n, opts.MaxResultTokens)
	}
	if res.StructuredContent != nil {
		t.Errorf("cut result still carries the structured copy of the whole payload")
	}
	if len(res.Content) != 3 || res.Content[1] != mcp.Content(image) {
		t.Errorf("got %d blocks, want the cut text, the image kept, the tag", len(res.Content))
	}
	if msgs := h.Messages(); msgs[3].Text != cut || !strings.Contains(cut, noa.TruncationMarker) {
		t.Errorf("the client's text is not the cut text the session recorded")
	}
	m := regexp.MustCompile(`read_archive \{"ref":"(m\d+)"`).FindStringSubmatch(cut)
	if m == nil || m[1] != "m00004" || !strings.HasPrefix(tx[1], "[m00004 ") {
		t.Errorf("pointer names %v, tag %q; want both m00004", m, tx[1])
	}
	// read_archive through the front returns the original's first page.
	page, err := nf.call(context.Background(), h, session.ReadArchiveToolName, session.ArgumentsText(json.RawMessage(`{"ref":"m00004"}`)), false, func(ctx context.Context) (*mcp.CallToolResult, error) {
		p, err := h.ReadArchive(ctx, session.ReadArchiveArgs{Ref: "m00004"})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(p.Text), mcp.NewTextContent(p.Note)}}, nil
	})
	if err != nil || !strings.HasPrefix(original, textBlocks(page)[0]) {
		t.Errorf("read_archive m00004: %v, want the original's first page", err)
	}
}
