package session

import (
	"context"
	"strings"
	"testing"
	"time"
)

// heldStateFS holds every write of state.json (its temporary file's
// creation) until release is closed, and says when one is waiting.
type heldStateFS struct {
	OS
	waiting chan struct{}
	release chan struct{}
}

func (f *heldStateFS) CreateTemp(dir, pattern string) (File, error) {
	if strings.HasPrefix(pattern, ".tmp-"+StateFile+"-") {
		select {
		case f.waiting <- struct{}{}:
		default:
		}
		<-f.release
	}
	return f.OS.CreateTemp(dir, pattern)
}

// A Manager's host writes its periodic state.json off the call path: the
// turns go on while the checkpoint's write is held, and state.json is
// current once it is let through (issue 13).
func TestCheckpointOffTheCallPath(t *testing.T) {
	opts := testOptions(t)
	opts.StateEvery = 2
	fs := &heldStateFS{waiting: make(chan struct{}, 1), release: make(chan struct{})}
	opts.FS = fs
	m := NewManager(opts)
	defer m.Close()
	h, err := m.Host("s")
	if err != nil {
		t.Fatal(err)
	}
	// The turns run aside, so that a turn waiting for the held write (as
	// every sixteenth did before) fails the test instead of hanging it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 7; i++ {
			if _, err := callTurn(h, "fs:read", "turn text"); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-fs.waiting:
	case <-time.After(10 * time.Second):
		close(fs.release)
		t.Fatal("no state.json write was started after StateEvery turns")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(fs.release)
		<-done
		t.Fatal("turns waited for the state.json checkpoint")
	}
	close(fs.release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := Inspect(opts, "s")
		if err != nil {
			t.Fatal(err)
		}
		if in.StateFile.Check == StateCurrent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state.json 10s after its write was let through: got %+v, want current", in.StateFile)
		}
		call(t, h, "fs:read", "again") // the next checkpoints come due
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openHost(t, opts, "s")
	if r := reopened.Report(); r.StateMismatch || r.StateMissing {
		t.Errorf("reopened: %+v, want a state.json that matches the transcript", r)
	}
}

// callTurn records a tool call and its result with a turn, as the MCP
// front does, returning the error instead of failing the test (it runs
// off the test's goroutine).
func callTurn(h *Host, tool, text string) (Turn, error) {
	rec, err := h.RecordUnsynced(context.Background(), toolCall(tool, nil))
	if err != nil {
		return Turn{}, err
	}
	return h.Turn(context.Background(), toolResult(rec[0], text))
}
