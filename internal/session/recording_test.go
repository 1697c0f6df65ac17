package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// bigCall is a tool call whose record (about n bytes) runs past the
// transcript's reserve.
func bigCall(tool string, n int) Message {
	args, _ := json.Marshal(map[string]string{"content": words(newRand(int64(n)), n/6)})
	return toolCall(tool, args)
}

// transcriptEnd is where the records of the session's transcript end,
// failing the test on stray bytes after them.
func transcriptEnd(t *testing.T, h *Host) (int64, int) {
	t.Helper()
	tr, err := readTranscript(filepath.Join(h.Dir(), TranscriptFile))
	if err != nil || tr.torn {
		t.Fatalf("reading the transcript: %v, stray bytes after the records %v", err, tr.torn)
	}
	return tr.valid, len(tr.records)
}

// On a real full disk (a tmpfs filled to ENOSPC) a record that does not
// fit is refused whole with ErrNotRecorded, the session's Recording says
// so from then on, the transcript and the live session still agree, and
// once space returns the next record lands on a clean line, clears the
// failure, and the session reopens as it was.
func TestFullDiskRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	testenv.Tmpfs(t, dir, 1<<20)
	opts := testOptionsIn(dir)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	if r := h.Recording(); r.Failing() {
		t.Fatalf("a session that records: got Recording %+v, want not failing", r)
	}
	free := testenv.FillDisk(t, dir)
	end, records := transcriptEnd(t, h)
	msgs := h.Messages()

	_, err := h.Record(context.Background(), bigCall("fs:big", 100<<10))
	if !errors.Is(err, ErrNotRecorded) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Record on a full disk: got %v, want ErrNotRecorded and ENOSPC", err)
	}
	r := h.Recording()
	if !r.Failing() || r.Since.IsZero() {
		t.Fatalf("after the failed write: got Recording %+v, want failing since a time", r)
	}
	if _, err := h.Turn(context.Background(), bigCall("fs:big2", 100<<10)); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("Turn on a full disk: got %v, want ErrNotRecorded", err)
	}
	if again := h.Recording(); again.Since != r.Since {
		t.Errorf("a second failure moved Since from %v to %v; want the start of the failures", r.Since, again.Since)
	}
	if gotEnd, gotRecords := transcriptEnd(t, h); gotEnd != end || gotRecords != records || len(h.Messages()) != len(msgs) {
		t.Errorf("after the failed writes: transcript %d bytes, %d records, %d messages; want %d, %d, %d (nothing half-written or counted)",
			gotEnd, gotRecords, len(h.Messages()), end, records, len(msgs))
	}

	free()
	call(t, h, "fs:b", "two")
	if r := h.Recording(); r.Failing() {
		t.Errorf("after a write succeeded again: got Recording %+v, want not failing", r)
	}
	live, liveState := h.Messages(), h.State()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2 := openHost(t, testOptionsIn(dir), "s")
	if rep := h2.Report(); rep.TornTail || rep.StateMismatch {
		t.Errorf("reopened: report %+v, want nothing torn or mismatched", rep)
	}
	if got := h2.Messages(); len(got) != len(live) || len(got) != 4 {
		t.Errorf("reopened with %d messages, the live session had %d; want 4", len(got), len(live))
	}
	if !sameState(h2.State(), liveState) {
		t.Errorf("reopened state differs from the live one: %s", stateDiff(liveState, h2.State()))
	}
}

// A disk with room for a batch of records but not for the reserve after
// it: the part of the reserve that did land is cut off again, so the file
// ends where the host thinks it does. Left there, the space stayed taken
// and the host, parked and used again, took the longer file for another
// process's writes and recorded nothing more.
func TestReservePartlyWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	testenv.Tmpfs(t, dir, 1<<20)
	h := openHost(t, testOptionsIn(dir), "s")
	call(t, h, "fs:a", "one")
	gap := filepath.Join(dir, "gap")
	if err := os.WriteFile(gap, make([]byte, 32<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	free := testenv.FillDisk(t, dir)
	if err := os.Remove(gap); err != nil { // 32 KiB free: the records fit, a reserve does not
		t.Fatal(err)
	}
	if _, err := h.Record(context.Background(), bigCall("fs:big", 70<<10)); err != nil {
		t.Fatalf("Record with room for the records: %v", err)
	}
	st, err := os.Stat(filepath.Join(h.Dir(), TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	alloc := h.trAlloc
	h.mu.Unlock()
	if st.Size() != alloc {
		t.Errorf("transcript is %d bytes on disk, the host expects %d", st.Size(), alloc)
	}
	free()
	if err := h.park(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Record(context.Background(), toolCall("fs:after", nil)); err != nil {
		t.Errorf("Record after parking: got %v, want it recorded", err)
	}
}

// Reason gives the model the system's error, never the session's paths.
func TestReason(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"errno", notRecorded{&os.PathError{Op: "write", Path: "/data/sessions/mcp-secret/transcript.jsonl", Err: syscall.ENOSPC}}, "no space left on device"},
		{"closed", ErrClosed, "the session is closed"},
		{"other", errors.New("reopening session mcp-secret: its transcript changed on disk"), "a storage error; mcproxy's log and /status have the details"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reason(tc.err); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
