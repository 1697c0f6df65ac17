package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// busySession drives a session through calls, nudges and the Compress calls
// the nudges ask for (tier 1 and, with low triggers, tier 2), plus one failed
// Compress, so its transcript exercises every record kind.
func busySession(t *testing.T, h *Host, calls int) {
	t.Helper()
	rng := newRand(21)
	compressed := 0
	for i := 0; i < calls; i++ {
		n := call(t, h, fmt.Sprintf("fs:read_%d", i%5), words(rng, 300+rng.Intn(600))).Nudge
		if n == "" {
			continue
		}
		var args []byte
		if strings.Contains(n, "Blocks to consolidate:") {
			args = tierArgs(n)
		} else {
			args = compressArgs(rangesOf(n))
		}
		if out := compress(t, h, args); !out.IsError {
			compressed++
		}
	}
	// A failed call too: it must replay as "skipped".
	compress(t, h, []byte(`{"content":[{"start":"m99999","end":"m99998","summary":"nothing here at all, just a test of a failing call"}]}`))
	if compressed < 2 {
		t.Fatalf("only %d Compress calls succeeded; the fixture should compress repeatedly", compressed)
	}
}

// tierArgs answers a tier nudge with its "Range covering all of them" line.
func tierArgs(nudge string) []byte {
	i := strings.Index(nudge, "Range covering all of them: start=")
	var start, end string
	fmt.Sscanf(nudge[i:], "Range covering all of them: start=%s end=%s", &start, &end)
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{
		"start": start, "end": end, "topic": "consolidated reads",
		"summary": "Source: " + start + "+...+" + end + ". Outcome: the data files were read and their facts extracted; retry loop in internal/session/host.go is fine.",
	}}})
	return b
}

func persistOptions(t *testing.T) Options {
	opts := testOptions(t)
	opts.Noa.Tiers.Tier2Trigger = 2
	return opts
}

// The state rebuilt from the transcript alone equals the saved one, after a
// clean close and after losing state.json.
func TestRebuildEqualsSavedState(t *testing.T) {
	opts := persistOptions(t)
	h := openHost(t, opts, "s")
	busySession(t, h, 120)
	live := h.State()
	tiers := map[noa.Tier]int{}
	for _, b := range live.Blocks {
		tiers[b.Tier]++
	}
	if tiers[2] == 0 {
		t.Errorf("got blocks by tier %v, want a tier-2 block in the fixture", tiers)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	saved, ok, err := readState(filepath.Join(h.Dir(), StateFile))
	if err != nil || !ok {
		t.Fatalf("state.json: %v %v", ok, err)
	}
	if !sameState(saved.State, live) {
		t.Fatalf("state.json differs from the live state: %s", stateDiff(saved.State, live))
	}
	tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	rp := replayTranscript(tr.records, -1, "s", &Archiver{Root: filepath.Join(h.Dir(), ArchiveDir)}, h.cfg, newMemo(opts.Count).count, false)
	if !sameState(rp.state, saved.State) {
		t.Fatalf("rebuilt from the transcript: %s", stateDiff(saved.State, rp.state))
	}
	if rp.result.Skipped == 0 || rp.result.Replayed < 2 {
		t.Errorf("got %d replayed, %d skipped; want several replayed and the failed call skipped", rp.result.Replayed, rp.result.Skipped)
	}

	h2 := openHost(t, opts, "s")
	if r := h2.Report(); r.StateMissing || r.StateBehind || r.StateMismatch || len(r.Warnings) > 0 {
		t.Errorf("reopen of a cleanly closed session reported %+v", r)
	}
	if !sameState(h2.State(), live) {
		t.Errorf("reopened state: %s", stateDiff(live, h2.State()))
	}
	h2.Close()

	if err := os.Remove(filepath.Join(h.Dir(), StateFile)); err != nil {
		t.Fatal(err)
	}
	h3 := openHost(t, opts, "s")
	if r := h3.Report(); !r.StateMissing {
		t.Errorf("got report %+v, want state.json reported missing", r)
	}
	if !sameState(h3.State(), live) {
		t.Errorf("state rebuilt without state.json: %s", stateDiff(live, h3.State()))
	}
	if _, ok, _ := readState(filepath.Join(h.Dir(), StateFile)); !ok {
		t.Errorf("state.json was not written back")
	}
}

// A state.json left behind (a crash between checkpoints) is verified at its
// own point of the transcript and brought forward.
func TestOpenBringsStaleStateForward(t *testing.T) {
	opts := persistOptions(t)
	opts.StateEvery = 1000 // only Compress calls write state.json
	h := openHost(t, opts, "s")
	busySession(t, h, 60)
	rng := newRand(4)
	for i := 0; i < 5; i++ {
		call(t, h, "fs:tail", words(rng, 100))
	}
	live := h.State()
	// No Close: the process "dies" with state.json behind the transcript.
	crash(t, h)
	h2, err := Open(opts, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	r := h2.Report()
	if !r.StateBehind || r.StateMismatch {
		t.Errorf("got report %+v, want behind and consistent", r)
	}
	if !sameState(h2.State(), live) {
		t.Errorf("brought forward: %s", stateDiff(live, h2.State()))
	}
}

// A state.json that disagrees with the transcript is reported and replaced
// by what the transcript says.
func TestOpenRepairsMismatchedState(t *testing.T) {
	opts := persistOptions(t)
	h := openHost(t, opts, "s")
	busySession(t, h, 60)
	live := h.State()
	h.Close()
	path := filepath.Join(h.Dir(), StateFile)
	saved, _, _ := readState(path)
	saved.State.Blocks = saved.State.Blocks[:len(saved.State.Blocks)-1]
	b, _ := encodeState(saved.Seq, saved.State)
	os.WriteFile(path, b, 0o600)
	h2 := openHost(t, opts, "s")
	if r := h2.Report(); !r.StateMismatch || !strings.Contains(strings.Join(r.Warnings, " "), "blocks") {
		t.Errorf("got report %+v, want a mismatch naming the blocks", r)
	}
	if !sameState(h2.State(), live) {
		t.Errorf("repaired: %s", stateDiff(live, h2.State()))
	}
}

// A record cut short by a crash is dropped; the next record starts clean.
func TestTornTranscriptTail(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	call(t, h, "fs:b", "two")
	live := h.State()
	h.Close()
	path := filepath.Join(h.Dir(), TranscriptFile)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"seq":5,"kind":"message","time":1,"message":{"id":"msg0000`)
	f.Close()
	h2 := openHost(t, opts, "s")
	if r := h2.Report(); !r.TornTail {
		t.Errorf("got report %+v, want the torn tail reported", r)
	}
	if !sameState(h2.State(), live) {
		t.Errorf("state after a torn tail: %s", stateDiff(live, h2.State()))
	}
	call(t, h2, "fs:c", "three")
	h2.Close()
	tr, err := readTranscript(path)
	if err != nil || tr.torn || len(tr.records) != 6 {
		t.Errorf("got %d records, torn %v, err %v; want 6 clean records", len(tr.records), tr.torn, err)
	}
}

// A corrupt record in the middle is an error, not a silent truncation.
func TestCorruptTranscriptIsAnError(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	h.Close()
	path := filepath.Join(h.Dir(), TranscriptFile)
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append([]byte("{not json}\n"), b...), 0o600)
	if _, err := Open(opts, "s"); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("got %v, want an error naming line 1", err)
	}
}

func TestInvalidSessionID(t *testing.T) {
	for _, id := range []string{"", "../x", ".hidden", "a/b", strings.Repeat("x", 129)} {
		if _, err := Open(testOptions(t), id); err == nil {
			t.Errorf("Open(%q) succeeded, want an error", id)
		}
	}
}

// A call whose result was never recorded (the process died while the
// upstream ran) keeps its reserved numbers: ids after a restart never repeat.
func TestIDsAfterUnansweredCall(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	slow, err := h.Record(context.Background(), toolCall("slow", nil))
	if err != nil {
		t.Fatal(err)
	}
	call(t, h, "fast", "quick") // msg000003 and its result msg000004
	// Crash while the slow call is unanswered, and reopen: the old process
	// is gone, so its late answer is not recorded.
	crash(t, h)
	h2 := openHost(t, opts, "s")
	call(t, h2, "next", "after")
	if _, err := h.Turn(context.Background(), toolResult(slow[0], "late")); !errors.Is(err, ErrClosed) {
		t.Errorf("the late answer to the crashed host: got %v, want ErrClosed", err)
	}
	seen := map[string]bool{}
	for _, m := range h2.Messages() {
		if seen[m.ID] {
			t.Fatalf("id %s used twice", m.ID)
		}
		seen[m.ID] = true
	}
	if got := h2.Messages()[len(h2.Messages())-1].ID; got != "msg000006" {
		t.Errorf("got last id %s, want msg000006", got)
	}
}
