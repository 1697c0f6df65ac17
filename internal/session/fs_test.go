package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// faultScript is a short session that makes every kind of write: records
// of calls and results, an oversize result's original, state.json after
// each turn, a Compress call's archives, transcript records and state.
// Failures are tolerated (they are what is being tested); a Go error skips
// what depended on the failed step.
func faultScript(h *Host) {
	ctx := context.Background()
	rng := newRand(11)
	callText := func(tool, text string) {
		rec, err := h.Record(ctx, toolCall(tool, nil))
		if err != nil {
			return
		}
		h.Turn(ctx, toolResult(rec[0], text))
	}
	for i := 0; i < 12; i++ {
		callText("fs:read", words(rng, 400))
	}
	callText("fs:read_big", words(rng, 6000))
	h.Compress(ctx, compressArgs([][2]string{{"m00001", "m00008"}, {"m00009", "m00016"}}))
	callText("fs:read", words(rng, 50))
}

// Every single write of a session failing in turn (a transient fault,
// writing half its bytes as a full disk does): whatever step it was, the
// step is undone or completed whole, so the session reopened from disk is
// exactly the live one, with nothing torn, missing or mismatched, and it
// goes on recording.
func TestRollbackOnEachFailedWrite(t *testing.T) {
	// state.json every fourth turn (and after Compress): its writes are
	// still among those that fail, at a quarter of the cost.
	options := func() Options {
		o := testOptions(t)
		o.StateEvery = 4
		return o
	}
	count := &failingFS{failWriteAfter: 1 << 30}
	opts := options()
	opts.FS = count
	h := openHost(t, opts, "s")
	faultScript(h)
	total := count.writes
	h.Close()
	if total < 25 {
		t.Fatalf("the script made %d writes, want a session's worth", total)
	}
	failed := 0
	for n := 0; n < total; n++ {
		ffs := &failingFS{failWriteAfter: n, once: true}
		opts := options()
		opts.FS = ffs
		h := openHost(t, opts, "s")
		faultScript(h)
		if ffs.writes <= n {
			t.Fatalf("write %d: the script made only %d writes this time", n+1, ffs.writes)
		}
		// Refs of messages no turn has seen yet (a call whose result failed
		// to record) are what the next turn gives them, as a rebuild does.
		liveMsgs := h.Messages()
		live := h.State()
		if err := h.Close(); err != nil {
			t.Fatalf("write %d failed: Close: %v", n+1, err)
		}
		h2 := openHost(t, testOptionsIn(opts.Dir), "s")
		r := h2.Report()
		if r.TornTail || r.StateMismatch || len(r.MissingArchives) > 0 {
			t.Errorf("write %d failed: reopening reported %+v, want nothing torn, mismatched or missing", n+1, r)
		}
		if got := h2.Messages(); len(got) != len(liveMsgs) {
			t.Errorf("write %d failed: reopened with %d messages, the live session had %d", n+1, len(got), len(liveMsgs))
		}
		if !sameState(h2.State(), live) {
			t.Errorf("write %d failed: reopened state differs from the live one: %s", n+1, stateDiff(live, h2.State()))
		}
		assertNoBlockWithoutArchive(t, h2)
		if len(liveMsgs) < 30 {
			failed++ // a step was undone
		}
		call(t, h2, "fs:after", "the session goes on")
		h2.Close()
	}
	if failed == 0 {
		t.Errorf("no failed write undid a step; the fault never reached the transcript")
	}
}

// transcriptFaults is session s with one call recorded, on a file system
// whose transcript writes the test can make fail (ffs.failWriteAfter).
func transcriptFaults(t *testing.T) (*Host, *failingFS, Options) {
	t.Helper()
	opts := testOptions(t)
	ffs := &failingFS{failWriteAfter: 1 << 30}
	opts.FS = ffs
	h := openHost(t, opts, "s")
	ffs.under = filepath.Join(h.Dir(), TranscriptFile)
	call(t, h, "fs:a", "one")
	return h, ffs, opts
}

// A transcript write fails: the record is cut back off, the messages it
// held are not in the session, and the next record starts on a clean line.
func TestTranscriptWriteFailureCutBack(t *testing.T) {
	h, ffs, opts := transcriptFaults(t)
	// Where the records end; no stray byte may follow them.
	size := func() int64 {
		tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
		if err != nil || tr.torn {
			t.Fatalf("reading the transcript: %v, stray bytes after the records %v", err, tr.torn)
		}
		return tr.valid
	}
	before, msgs, st := size(), h.Messages(), h.State()

	ffs.failWriteAfter, ffs.once = ffs.writes, true
	_, err := h.Record(context.Background(), toolCall("fs:b", nil))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "writing the transcript") {
		t.Fatalf("Record on a full disk: got %v, want ENOSPC writing the transcript", err)
	}
	if got := size(); got != before {
		t.Errorf("transcript is %d bytes after the failed write, want it cut back to %d", got, before)
	}
	if got := h.Messages(); len(got) != len(msgs) || !sameState(h.State(), st) {
		t.Errorf("got %d messages, want %d and the state unchanged", len(got), len(msgs))
	}

	// The same for a result, recorded with a turn.
	rec, err := h.Record(context.Background(), toolCall("fs:c", nil))
	if err != nil {
		t.Fatal(err)
	}
	before, st = size(), h.State()
	ffs.failWriteAfter = ffs.writes
	if _, err := h.Turn(context.Background(), toolResult(rec[0], "three")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Turn on a full disk: got %v, want ENOSPC", err)
	}
	if got := size(); got != before || len(h.Messages()) != len(msgs)+1 || !sameState(h.State(), st) {
		t.Errorf("after the failed turn: transcript %d bytes (want %d), %d messages (want %d), state changed %v",
			got, before, len(h.Messages()), len(msgs)+1, !sameState(h.State(), st))
	}
	// With space again the result is recorded and takes the id its call
	// kept for it.
	turn, err := h.Turn(context.Background(), toolResult(rec[0], "three"))
	if err != nil || turn.Recorded[0].ID != "msg000006" {
		t.Fatalf("retry: %v, recorded %+v; want msg000006", err, turn.Recorded)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2 := openHost(t, testOptionsIn(opts.Dir), "s")
	if r := h2.Report(); r.TornTail || r.StateMismatch || len(h2.Messages()) != 4 {
		t.Errorf("reopened: report %+v, %d messages; want a clean transcript with 4 messages", r, len(h2.Messages()))
	}
}

// A failed write whose stray bytes cannot be cut back (Truncate fails
// too): the host records nothing more while they stay, since the next
// record would be glued to them, and says so; each later record tries the
// cut again, so once it works the session records again (a disk that
// recovers), and the transcript reads back clean, also after a reopen.
func TestTranscriptCutBackFailure(t *testing.T) {
	h, ffs, opts := transcriptFaults(t)
	msgs := h.Messages()

	ffs.failWriteAfter, ffs.once, ffs.failTruncate = ffs.writes, true, true
	_, err := h.Record(context.Background(), toolCall("fs:b", nil))
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "cutting the transcript back") {
		t.Fatalf("got %v, want the write's ENOSPC and the cut-back's EIO", err)
	}
	_, err = h.Record(context.Background(), toolCall("fs:c", nil))
	if err == nil || !strings.Contains(err.Error(), "nothing more is recorded until that cut succeeds") {
		t.Fatalf("the next record while the cut still fails: got %v, want a refusal naming the earlier failure", err)
	}
	if p, err := h.Compress(context.Background(), compressArgs([][2]string{{"m00001", "m00002"}})); err == nil {
		t.Errorf("Compress on a broken transcript: got panel %q, want an error", p.Text)
	}
	ffs.failTruncate = false
	if _, err := h.Record(context.Background(), toolCall("fs:d", nil)); err != nil {
		t.Fatalf("the next record once the cut works: got %v, want it recorded", err)
	}
	if r := h.Recording(); r.Failing() {
		t.Errorf("after a record succeeded again: got Recording %+v, want not failing", r)
	}
	if tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile)); err != nil || tr.torn || len(tr.records) != len(msgs)+1 {
		t.Errorf("live transcript: %d records, torn %v, %v; want %d clean records", len(tr.records), tr.torn, err, len(msgs)+1)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile)); err != nil || tr.torn || tr.reserve {
		t.Errorf("after Close: torn %v, reserve %v, %v; want the records only", tr.torn, tr.reserve, err)
	}
	h2 := openHost(t, testOptionsIn(opts.Dir), "s")
	if r := h2.Report(); r.StateMismatch || r.TornTail || len(h2.Messages()) != len(msgs)+1 {
		t.Errorf("reopened: report %+v with %d messages; want the %d messages kept", r, len(h2.Messages()), len(msgs)+1)
	}
	call(t, h2, "fs:e", "five")
	h2.Close()
	if tr, err := readTranscript(filepath.Join(h2.Dir(), TranscriptFile)); err != nil || tr.torn || len(tr.records) != len(msgs)+3 {
		t.Errorf("transcript: %d records, torn %v, %v; want %d clean records", len(tr.records), tr.torn, err, len(msgs)+3)
	}
}

// A torn tail that cannot be cut off at open is an error, not a session
// that would glue its next record to the stray bytes.
func TestOpenTornTailTruncateFailure(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	h.Close()
	f, err := os.OpenFile(filepath.Join(h.Dir(), TranscriptFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"kind":"mess`)
	f.Close()
	opts.FS = &failingFS{failWriteAfter: 1 << 30, failTruncate: true}
	if _, err := Open(opts, "s"); !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "dropping the torn last record") {
		t.Errorf("got %v, want the failed cut named", err)
	}
	// The failed Open let go of the lock.
	openHost(t, testOptionsIn(opts.Dir), "s")
}
