package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// A call and its result are recorded as a numbered pair, the result gets
// the next ref, and what the transcript keeps beside each (is_error) is
// there.
func TestRecordAndTurn(t *testing.T) {
	for _, isError := range []bool{false, true} {
		t.Run(fmt.Sprintf("is_error=%v", isError), func(t *testing.T) {
			h := openHost(t, testOptions(t), "s")
			rec, err := h.Record(context.Background(), toolCall("fs:read", json.RawMessage(`{ "path" : "/a" }`)))
			if err != nil {
				t.Fatal(err)
			}
			res := toolResult(rec[0], "hello world")
			res.IsError = isError
			turn, err := h.Turn(context.Background(), res)
			if err != nil {
				t.Fatal(err)
			}
			want := []noa.CoreMessage{
				{ID: "msg000001", Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "fs:read", ToolCallID: "call000001", Text: `{"path":"/a"}`},
				{ID: "msg000002", Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "fs:read", ToolCallID: "call000001", Text: "hello world"},
			}
			if diff := cmp.Diff(want, h.Messages()); diff != "" {
				t.Errorf("recorded messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, turn.View); diff != "" {
				t.Errorf("view (-want +got):\n%s", diff)
			}
			if got := turn.Recorded; len(got) != 1 || got[0].CoreMessage != want[1] || got[0].IsError != isError {
				t.Errorf("turn.Recorded: got %+v, want the result as recorded", got)
			}
			tr, _ := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
			if len(tr.records) != 2 || tr.records[1].Message.IsError != isError || tr.records[1].Pacing == nil || tr.records[0].Pacing != nil {
				t.Fatalf("got %d records; want 2, the result's with is_error %v and the turn's pacing", len(tr.records), isError)
			}
			ref, ok := h.Ref("msg000002")
			st := h.State()
			if !ok || ref.Ref != "m00002" || ref.Tokens != st.TokenSnapshot["m00002"] || ref.Tokens == 0 {
				t.Errorf("result ref: got %+v, %v; want m00002 with its frozen count %d", ref, ok, st.TokenSnapshot["m00002"])
			}
			if turn.Projected != h.sum(turn.View) || turn.Total != turn.Projected || turn.ContextLimit != 20000 || turn.SystemPrompt != Instructions() {
				t.Errorf("figures: got total %d, projected %d, limit %d; want %d, %d, 20000 and noa's prompt", turn.Total, turn.Projected, turn.ContextLimit, h.sum(turn.View), h.sum(turn.View))
			}
		})
	}
}

// Bad input is refused with an error naming the message and what to do,
// and records nothing.
func TestRecordBadInput(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	call(t, h, "fs:a", "one")
	text := func(id string) Message {
		return Message{CoreMessage: noa.CoreMessage{ID: id, Role: noa.RoleUser, ContentType: noa.CTText, Text: "hi"}}
	}
	tests := []struct {
		name string
		msgs []Message
		want string
	}{
		{"unknown role", []Message{{CoreMessage: noa.CoreMessage{Role: "robot", ContentType: noa.CTText}}}, `message 1 of 1: role "robot": want "system", "user", "assistant" or "tool"`},
		{"unknown content type", []Message{text(""), {CoreMessage: noa.CoreMessage{Role: noa.RoleUser, ContentType: "image"}}}, `message 2 of 2: content type "image"`},
		{"id taken", []Message{text("msg000001")}, `id "msg000001" is already in the session`},
		{"id twice", []Message{text("u1"), text("u1")}, `message 2 of 2: id "u1" is already in the session`},
		{"nudge id", []Message{text(noa.NudgeMessageID)}, "noa's own"},
		{"original given", []Message{{CoreMessage: text("").CoreMessage, Original: "results/x.txt"}}, "Original is set by the host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, records := h.Messages(), h.seq
			_, err := h.Record(context.Background(), tc.msgs...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Record: got %v, want an error containing %q", err, tc.want)
			}
			if _, err := h.Turn(context.Background(), tc.msgs...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Turn: got %v, want an error containing %q", err, tc.want)
			}
			if after := h.Messages(); len(after) != len(before) || h.seq != records {
				t.Errorf("got %d messages and %d records, want %d and %d: a refused batch must record nothing", len(after), h.seq, len(before), records)
			}
		})
	}
	// The session goes on numbering where it was.
	call(t, h, "fs:b", "two")
	if got := h.Messages()[3].ID; got != "msg000004" {
		t.Errorf("after refused batches: got id %s, want msg000004", got)
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
	call(t, h, "c", "three")
	msgs := h.Messages()
	last := msgs[len(msgs)-1].ID
	if want := "msg000006"; last != want {
		t.Errorf("got id %q after restart, want %q", last, want)
	}
	if ref, _ := h.Ref(last); ref.Ref != "m00006" {
		t.Errorf("got ref %q, want m00006", ref.Ref)
	}
}

// A call recorded whose result never came, then a clean close: state.json
// holds the call's ref as the transcript rebuilds it, so the next open finds
// nothing to repair.
func TestCloseWithCallInFlight(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	if _, err := h.Record(context.Background(), toolCall("fs:slow", nil)); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = openHost(t, opts, "s")
	if r := h.Report(); r.StateBehind || r.StateMismatch || r.StateMissing || len(r.Warnings) > 0 {
		t.Errorf("reopen after closing with a call in flight reported %+v, want nothing to repair", r)
	}
	if ref, ok := h.Ref("msg000003"); !ok || ref.Ref != "m00003" {
		t.Errorf("the unanswered call: got ref %+v, %v; want m00003", ref, ok)
	}
}

// A nudge comes with a turn; following it compresses, archives the
// originals verbatim, and quiets the nudges.
func TestNudgeCompressArchiveRecall(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	rng := rand.New(rand.NewSource(7))
	nudge := fillUntilNudge(t, h, rng).Nudge
	for _, want := range []string{"HOW TO COMPRESS", "compressible", noa.SystemPromptHeader} {
		if !strings.Contains(nudge, want) {
			t.Errorf("nudge lacks %q", want)
		}
	}
	ranges := rangesOf(nudge)
	if len(ranges) == 0 {
		t.Fatalf("nudge names no compressible range:\n%s", nudge)
	}
	out := compress(t, h, compressArgs(ranges))
	if out.IsError || !strings.Contains(out.Text, "block(s) created") || len(out.Blocks) == 0 {
		t.Fatalf("got panel\n%s\nwant blocks created", out.Text)
	}
	msgs := h.Messages()
	if got := msgs[len(msgs)-2:]; got[0] != out.Call || got[1] != out.Result || out.Result.Text != out.Text {
		t.Errorf("the stream does not end with the Compress call and its panel as the panel reports them")
	}
	st := h.State()
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
		if n := call(t, h, "fs:small", words(rng, 50)).Nudge; n != "" {
			t.Fatalf("call %d after compressing: got a nudge again", i)
		}
	}
}

// A text above MaxResultTokens is recorded head-and-tail within the limit,
// with the marker and a read_archive call that returns the cut part; the
// original is archived verbatim and fully recoverable, also after a
// restart.
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
	turn := callArgs(t, h, "fs:read_big", nil, original)
	got := turn.Recorded[0]
	cut := got.Text
	if n := counter.Count(cut); n > opts.MaxResultTokens {
		t.Errorf("cut result has %d tokens, want at most %d", n, opts.MaxResultTokens)
	}
	if !strings.Contains(cut, noa.TruncationMarker) {
		t.Fatalf("cut result lacks noa's truncation marker")
	}
	if want := ResultsDir + "/msg000004.txt"; got.Original != want {
		t.Errorf("Original: got %q, want %q", got.Original, want)
	}
	m := regexp.MustCompile(`read_archive \{"ref":"(m\d+)","offset":(\d+),"limit":(\d+)\}`).FindStringSubmatch(cut)
	if m == nil {
		t.Fatalf("cut result names no read_archive call:\n%s", cut[len(cut)/2-400:len(cut)/2+400])
	}
	if ref, _ := h.Ref(got.ID); m[1] != "m00004" || ref.Ref != "m00004" {
		t.Errorf("pointer names %s, the result's ref is %s; want both m00004", m[1], ref.Ref)
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
	// The recorded message is the cut text, and the pointer survives a
	// restart.
	if got := h.Messages()[3].Text; got != cut {
		t.Errorf("recorded text is not the cut text the turn returned")
	}
	h.Close()
	h = openHost(t, opts, "s")
	if again, _ := readAll(t, h, ReadArchiveArgs{Ref: "m00004"}); again != original {
		t.Errorf("after restart read_archive m00004 no longer returns the original")
	}
	// Without CutToSize the same text is recorded whole.
	rec, err := h.Record(context.Background(), toolCall("fs:read_big", nil))
	if err != nil {
		t.Fatal(err)
	}
	whole := toolResult(rec[0], original)
	whole.CutToSize = false
	if turn, err := h.Turn(context.Background(), whole); err != nil || turn.Recorded[0].Text != original || turn.Recorded[0].Original != "" {
		t.Errorf("a text recorded without CutToSize was cut (%v)", err)
	}
}

// An oversize text whose original cannot be archived is recorded whole.
func TestOversizeArchiveFailureReturnsWhole(t *testing.T) {
	opts := testOptions(t)
	opts.MaxResultTokens = 500
	opts.FS = &failingFS{under: filepath.Join(opts.Dir, "s", ArchiveDir), failWriteAfter: 0}
	h := openHost(t, opts, "s")
	big := words(rand.New(rand.NewSource(1)), 5000)
	got := call(t, h, "fs:big", big).Recorded[0]
	if got.Text != big || got.Original != "" {
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
			if err == nil {
				var page Page
				page, err = h.ReadArchive(context.Background(), a)
				if err == nil {
					t.Fatalf("got page %q, want an error", page.Text)
				}
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to contain %q", err, tc.want)
			}
		})
	}
	// Numbers as strings are accepted.
	a, err := ParseReadArchiveArgs([]byte(`{"ref":"m00002","offset":"2","limit":"2"}`))
	if err != nil {
		t.Fatal(err)
	}
	if page, err := h.ReadArchive(context.Background(), a); err != nil || page.Text != "ph" {
		t.Errorf("got %q (%v), want %q", page.Text, err, "ph")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.ReadArchive(ctx, a); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
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
	got := call(t, h, "vault:read", original).Recorded[0]
	if ref, ok := h.Ref(got.ID); ok {
		t.Errorf("a protected result got ref %+v, want none", ref)
	}
	if !strings.Contains(got.Text, `read_archive {"ref":"msg000002"`) {
		t.Fatalf("cut text does not point at the message id")
	}
	if got, _ := readAll(t, h, ReadArchiveArgs{Ref: "msg000002"}); got != original {
		t.Errorf("read_archive by message id: got %d bytes, want the %d-byte original", len(got), len(original))
	}
}

// Calls of one session running in parallel are all recorded, each result
// after its call, with distinct refs.
func TestParallelCallsInOneSession(t *testing.T) {
	h := openHost(t, testOptions(t), "s")
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				call(t, h, fmt.Sprintf("fs:%d", i), words(newRand(int64(i*100+j)), 50))
			}
		}(i)
	}
	wg.Wait()
	msgs := h.Messages()
	if len(msgs) != 320 {
		t.Fatalf("got %d messages, want 320", len(msgs))
	}
	seenCall := map[string]bool{}
	for _, m := range msgs {
		switch m.ContentType {
		case noa.CTToolCall:
			seenCall[m.ToolCallID] = true
		case noa.CTToolResult:
			if !seenCall[m.ToolCallID] {
				t.Fatalf("result %s recorded before its call", m.ID)
			}
		}
	}
	st := h.State()
	if got := len(st.MessageRefs.ByRef); got != 320 {
		t.Errorf("got %d refs, want 320", got)
	}
	h.Close()
	h2 := openHost(t, testOptionsIn(filepath.Dir(h.Dir())), "s")
	if !sameState(st, h2.State()) {
		t.Errorf("rebuilt after parallel calls: %s", stateDiff(st, h2.State()))
	}
}
