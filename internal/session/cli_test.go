package session

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCLI(t *testing.T) {
	opts := persistOptions(t)
	h := openHost(t, opts, "alpha")
	busySession(t, h, 80)
	live := h.State()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	other := openHost(t, opts, "beta")
	call(t, other, "fs:a", "one")
	other.Close()

	t.Run("list", func(t *testing.T) {
		var b bytes.Buffer
		if err := List(&b, opts); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"SESSION", "TOKENS SAVED", "alpha", "beta"} {
			if !strings.Contains(out, want) {
				t.Errorf("list lacks %q:\n%s", want, out)
			}
		}
		active := 0
		for _, bl := range live.Blocks {
			if bl.Active {
				active++
			}
		}
		if want := regexp.MustCompile(`alpha\s+\S+ \S+\s+\d+\s+` + itoa(active) + ` active / ` + itoa(len(live.Blocks))); !want.MatchString(out) {
			t.Errorf("list row for alpha does not show %d active of %d blocks:\n%s", active, len(live.Blocks), out)
		}
	})
	t.Run("list with no sessions", func(t *testing.T) {
		var b bytes.Buffer
		o := opts
		o.Dir = filepath.Join(t.TempDir(), "none")
		if err := List(&b, o); err != nil || !strings.Contains(b.String(), "no sessions") {
			t.Errorf("got %q, %v; want a no-sessions line", b.String(), err)
		}
	})
	t.Run("show", func(t *testing.T) {
		var b bytes.Buffer
		if err := Show(&b, opts, "alpha"); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"state.json  current", "BLOCK", "TIER", "absorbed by", "T2", filepath.Join(h.Dir(), ArchiveDir, "tier1")} {
			if !strings.Contains(out, want) {
				t.Errorf("show lacks %q:\n%s", want, out)
			}
		}
		for _, bl := range live.Blocks {
			if !strings.Contains(out, bl.BlockID+"  ") {
				t.Errorf("show does not list block %s", bl.BlockID)
			}
		}
		if strings.Contains(out, "MISSING") {
			t.Errorf("show reports a missing archive:\n%s", out)
		}
	})
	t.Run("show unknown", func(t *testing.T) {
		if err := Show(&bytes.Buffer{}, opts, "nope"); err == nil || !strings.Contains(err.Error(), `no session "nope"`) {
			t.Errorf("got %v, want a no-such-session error", err)
		}
	})
	t.Run("archive", func(t *testing.T) {
		bl := live.Blocks[0]
		var b bytes.Buffer
		if err := Archive(&b, opts, "alpha", bl.BlockID); err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(bl.ArchivePath)
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("archive %s: got %d bytes, want the file's %d bytes verbatim", bl.BlockID, b.Len(), len(want))
		}
		if err := Archive(&bytes.Buffer{}, opts, "alpha", "b999"); err == nil || !strings.Contains(err.Error(), "its blocks are b1") {
			t.Errorf("got %v, want an error listing the blocks", err)
		}
	})
	t.Run("rebuild", func(t *testing.T) {
		// Lose state.json and one archive; rebuild restores both.
		os.Remove(filepath.Join(h.Dir(), StateFile))
		lost := live.Blocks[len(live.Blocks)-1]
		os.Remove(lost.ArchivePath)
		var b bytes.Buffer
		if err := Rebuild(&b, opts, "alpha"); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, want := range []string{"state.json before: missing", "state.json now: current", "recreated missing archive " + lost.ArchiveRel} {
			if !strings.Contains(out, want) {
				t.Errorf("rebuild output lacks %q:\n%s", want, out)
			}
		}
		saved, ok, err := readState(filepath.Join(h.Dir(), StateFile))
		if err != nil || !ok || !sameState(saved.State, live) {
			t.Errorf("rebuilt state.json differs from the live state (%v %v)", ok, err)
		}
		if _, err := os.Stat(lost.ArchivePath); err != nil {
			t.Errorf("archive not recreated: %v", err)
		}
	})
}

func itoa(n int) string { return fmtInt(n) }
