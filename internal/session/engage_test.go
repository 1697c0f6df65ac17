package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestEngageIsRecorded: Engage is one transcript record, written once,
// that Turn and Peek report and that a reopened session (state.json gone
// or not) still holds.
func TestEngageIsRecorded(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	if turn := call(t, h, "read", "a short result"); turn.Engaged {
		t.Fatalf("a new session's turn reports Engaged")
	}
	for range 2 {
		if err := h.Engage(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if turn := call(t, h, "read", "another result"); !turn.Engaged || !h.Engaged() {
		t.Errorf("after Engage: turn Engaged %v, host Engaged %v; want both", turn.Engaged, h.Engaged())
	}
	tr, err := os.ReadFile(filepath.Join(opts.Dir, "s", TranscriptFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(tr, []byte(`"kind":"engage"`)); n != 1 {
		t.Errorf("the transcript holds %d engage records, want 1", n)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"reopened", "without state.json"} {
		if name == "without state.json" {
			if err := os.Remove(filepath.Join(opts.Dir, "s", StateFile)); err != nil {
				t.Fatal(err)
			}
		}
		h2, err := Open(opts, "s")
		if err != nil {
			t.Fatal(err)
		}
		p, err := h2.Peek(context.Background())
		if err != nil || !p.Engaged || !h2.Engaged() {
			t.Errorf("%s: Peek Engaged %v (%v), host Engaged %v; want the engagement kept", name, p.Engaged, err, h2.Engaged())
		}
		if err := h2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
