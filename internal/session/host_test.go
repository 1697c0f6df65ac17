package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

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
			h := openHost(t, testOptions(t), "s")
			var before *mcp.CallToolResult
			if tc.res != nil {
				c := *tc.res
				c.Content = append([]mcp.Content(nil), tc.res.Content...)
				before = &c
			}
			got, err := h.Call(context.Background(), "fs:read", json.RawMessage(`{ "path" : "/a" }`), func(context.Context) (*mcp.CallToolResult, error) {
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
			tr, _ := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
			if len(tr.records) != 2 || tr.records[1].Message.IsError != tc.wantErr {
				t.Fatalf("got %d records (result is_error %v), want 2 records with is_error %v", len(tr.records), tr.records[len(tr.records)-1].Message.IsError, tc.wantErr)
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

// Ids and refs keep counting across calls and restarts.
func TestStableIDsAcrossRestart(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "a", "one")
	call(t, h, "b", "two")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, "s")
	res := call(t, h, "c", "three")
	msgs := h.Messages()
	if got, want := msgs[len(msgs)-1].ID, "msg000006"; got != want {
		t.Errorf("got id %q after restart, want %q", got, want)
	}
	if got := texts(res)[1]; !strings.HasPrefix(got, "[m00006 ") {
		t.Errorf("got tag %q, want ref m00006", got)
	}
}

// A nudge arrives as an extra block; following it compresses, archives the
// originals verbatim, and quiets the nudges.
func TestNudgeCompressArchiveRecall(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	rng := rand.New(rand.NewSource(7))
	res := fillUntilNudge(t, h, rng)
	nudge := nudgeOf(res)
	if got := texts(res); got[len(got)-1] != nudge || !strings.HasPrefix(got[len(got)-2], "[m") {
		t.Fatalf("got blocks %q..., want the content, the ref tag, then the nudge", got[len(got)-2][:20])
	}
	for _, want := range []string{"HOW TO COMPRESS", "compressible"} {
		if !strings.Contains(nudge, want) {
			t.Errorf("nudge lacks %q", want)
		}
	}
	ranges := rangesOf(nudge)
	if len(ranges) == 0 {
		t.Fatalf("nudge names no compressible range:\n%s", nudge)
	}
	out, err := h.HandleCompress(context.Background(), compressArgs(ranges))
	if err != nil {
		t.Fatal(err)
	}
	panel := texts(out)[0]
	if out.IsError || !strings.Contains(panel, "block(s) created") {
		t.Fatalf("got panel\n%s\nwant blocks created", panel)
	}
	st := h.State()
	msgs := h.Messages()
	byID := map[string]noa.CoreMessage{}
	for _, m := range msgs {
		byID[m.ID] = m
	}
	for _, b := range st.Blocks {
		data, err := os.ReadFile(b.ArchivePath)
		if err != nil {
			t.Fatalf("archive of %s: %v", b.BlockID, err)
		}
		for _, id := range b.DirectMessageIDs {
			if !strings.Contains(string(data), byID[id].Text) {
				t.Errorf("archive of %s lacks message %s verbatim", b.BlockID, id)
			}
		}
		got, pages := readAll(t, h, ReadArchiveArgs{Block: b.BlockID})
		if got != string(data) {
			t.Errorf("read_archive %s: got %d bytes over %d page(s), want the archive's %d bytes exactly", b.BlockID, len(got), pages, len(data))
		}
		// Smaller pages put back together give the same bytes.
		got, pages = readAll(t, h, ReadArchiveArgs{Block: b.BlockID, Limit: 777})
		if got != string(data) || pages < 2 {
			t.Errorf("read_archive %s in 777-byte pages: got %d bytes over %d pages, want %d bytes over several", b.BlockID, len(got), pages, len(data))
		}
	}
	// The next calls are not nudged again straight away.
	for i := 0; i < 3; i++ {
		if n := nudgeOf(call(t, h, "fs:small", words(rng, 50))); n != "" {
			t.Fatalf("call %d after compressing: got a nudge again", i)
		}
	}
}

// A result above MaxResultTokens comes back head-and-tail within the limit,
// with the marker and a read_archive call that returns the cut part; the
// original is archived verbatim and fully recoverable.
func TestOversizeResult(t *testing.T) {
	counter, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Count = counter.Count
	opts.MaxResultTokens = 1000
	h := openHost(t, opts, "s")
	call(t, h, "fs:small", "first")
	rng := rand.New(rand.NewSource(3))
	original := words(rng, 12000) + "\nlast line ünïcödé ✓"
	res, err := h.Call(context.Background(), "fs:read_big", nil, func(context.Context) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(original)}, StructuredContent: map[string]any{"text": original}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tx := texts(res)
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
	if !strings.Contains(cut, noa.TruncationMarker) {
		t.Fatalf("cut result lacks noa's truncation marker")
	}
	m := regexp.MustCompile(`read_archive \{"ref":"(m\d+)","offset":(\d+),"limit":(\d+)\}`).FindStringSubmatch(cut)
	if m == nil {
		t.Fatalf("cut result names no read_archive call:\n%s", cut[len(cut)/2-400:len(cut)/2+400])
	}
	if m[1] != "m00004" || !strings.HasPrefix(tx[1], "[m00004 ") {
		t.Errorf("pointer names %s, tag %q; want both m00004", m[1], tx[1])
	}
	var off, lim int
	fmt.Sscan(m[2], &off)
	fmt.Sscan(m[3], &lim)
	if !strings.HasPrefix(original, cut[:off]) {
		t.Errorf("the head is not the original's first %d bytes", off)
	}
	if !strings.HasSuffix(original, cut[strings.LastIndex(cut, "]\n\n")+3:]) {
		t.Errorf("the tail is not the end of the original")
	}
	// The exact call from the note returns the cut part.
	rest, _ := readAll(t, h, ReadArchiveArgs{Ref: m[1], Offset: off, Limit: lim})
	if !strings.HasPrefix(original[off:], rest) || len(rest) < lim {
		t.Errorf("read_archive from the note: got %d bytes, want the %d cut bytes", len(rest), lim)
	}
	all, pages := readAll(t, h, ReadArchiveArgs{Ref: m[1]})
	if all != original {
		t.Errorf("read_archive of the whole original: got %d bytes over %d pages, want %d bytes byte-identical", len(all), pages, len(original))
	}
	if pages < 2 {
		t.Errorf("got %d page(s), want the original paged under the result limit", pages)
	}
	stored, err := os.ReadFile(filepath.Join(h.Dir(), ArchiveDir, ResultsDir, "msg000004.txt"))
	if err != nil || string(stored) != original {
		t.Errorf("archived original: %v, %d bytes; want %d bytes verbatim", err, len(stored), len(original))
	}
	// The recorded message is what the client holds (the cut text), and the
	// pointer survives a restart.
	if got := h.Messages()[3].Text; got != cut {
		t.Errorf("recorded text is not the cut text the client got")
	}
	h.Close()
	h = openHost(t, opts, "s")
	if again, _ := readAll(t, h, ReadArchiveArgs{Ref: "m00004"}); again != original {
		t.Errorf("after restart read_archive m00004 no longer returns the original")
	}
}

// An oversize result whose original cannot be archived goes back whole.
func TestOversizeArchiveFailureReturnsWhole(t *testing.T) {
	opts := testOptions(t)
	opts.MaxResultTokens = 500
	opts.FS = &failingFS{OS: OS{}, failWriteAfter: 0}
	h := openHost(t, opts, "s")
	big := words(rand.New(rand.NewSource(1)), 5000)
	res := call(t, h, "fs:big", big)
	if texts(res)[0] != big {
		t.Errorf("got a cut result although its original could not be archived")
	}
}

func TestReadArchiveErrors(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	call(t, h, "fs:a", "alpha")
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"nothing named", `{}`, `read_archive needs "block"`},
		{"both named", `{"block":"b1","ref":"m00001"}`, `either "block" or "ref"`},
		{"unknown block", `{"block":"b9"}`, `no block "b9"`},
		{"unknown ref", `{"ref":"m00077"}`, `no message "m00077"`},
		{"offset past end", `{"ref":"m00002","offset":999}`, "past the end"},
		{"negative offset", `{"ref":"m00002","offset":-1}`, "whole number of bytes"},
		{"block not a string", `{"block":3}`, `"block" must be a string`},
		{"not an object", `[1]`, "must be a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseReadArchiveArgs([]byte(tc.raw))
			var msg string
			if err != nil {
				msg = err.Error()
			} else {
				res := h.ReadArchive(context.Background(), a)
				if !res.IsError {
					t.Fatalf("got success %q, want an error", texts(res))
				}
				msg = texts(res)[0]
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("got %q, want it to contain %q", msg, tc.want)
			}
		})
	}
	// Numbers as strings are accepted.
	a, err := ParseReadArchiveArgs([]byte(`{"ref":"m00002","offset":"2","limit":"2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h.ReadArchive(context.Background(), a))[0]; got != "ph" {
		t.Errorf("got %q, want %q", got, "ph")
	}
}

// A protected tool's result has no ref; a cut one is pointed at by its
// message id, which read_archive accepts too.
func TestOversizeProtectedToolResult(t *testing.T) {
	opts := testOptions(t)
	opts.MaxResultTokens = 500
	opts.Noa.ProtectedTools = []string{"vault:*"}
	h := openHost(t, opts, "s")
	original := words(newRand(9), 4000)
	res := call(t, h, "vault:read", original)
	tx := texts(res)
	if len(tx) != 1 {
		t.Fatalf("got %d text blocks, want only the cut text (a protected result has no tag)", len(tx))
	}
	if !strings.Contains(tx[0], `read_archive {"ref":"msg000002"`) {
		t.Fatalf("cut text does not point at the message id")
	}
	if got, _ := readAll(t, h, ReadArchiveArgs{Ref: "msg000002"}); got != original {
		t.Errorf("read_archive by message id: got %d bytes, want the %d-byte original", len(got), len(original))
	}
}
