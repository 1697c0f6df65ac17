package session

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
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
		list, err := List(opts)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"alpha", "beta"}) {
			t.Fatalf("got sessions %v, want alpha and beta", ids)
		}
		if !list[0].LastActive.After(list[1].LastActive) && !(list[0].LastActive.Equal(list[1].LastActive) && list[0].ID < list[1].ID) {
			t.Errorf("got %s (%v) before %s (%v), want the most recent first", list[0].ID, list[0].LastActive, list[1].ID, list[1].LastActive)
		}
		alpha := list[0]
		if alpha.ID != "alpha" {
			alpha = list[1]
		}
		active := 0
		for _, bl := range live.Blocks {
			if bl.Active {
				active++
			}
		}
		if alpha.ActiveBlocks != active || alpha.Blocks != len(live.Blocks) || alpha.Messages != len(live.MessageRefs.ByRaw) || alpha.TokensSaved <= 0 {
			t.Errorf("alpha: got %d active of %d blocks, %d messages, %d tokens saved; want %d of %d, %d, and some saved",
				alpha.ActiveBlocks, alpha.Blocks, alpha.Messages, alpha.TokensSaved, active, len(live.Blocks), len(live.MessageRefs.ByRaw))
		}
		if fi, _ := os.Stat(filepath.Join(h.Dir(), TranscriptFile)); alpha.TranscriptBytes != fi.Size() || !alpha.LastActive.Equal(fi.ModTime()) {
			t.Errorf("alpha: got %d bytes at %v, want the transcript's %d at %v", alpha.TranscriptBytes, alpha.LastActive, fi.Size(), fi.ModTime())
		}
	})
	t.Run("list a session with no state.json yet", func(t *testing.T) {
		o := persistOptions(t)
		h := openHost(t, o, "gamma")
		defer h.Close()
		call(t, h, "fs:a", "one")
		call(t, h, "fs:b", "two")
		// As it is before its first checkpoint (issue 30: 0 messages).
		if err := os.Remove(filepath.Join(h.Dir(), StateFile)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		list, err := List(o)
		if err != nil || len(list) != 1 {
			t.Fatalf("got %v, %v; want gamma", list, err)
		}
		if want := len(h.Messages()); want == 0 || list[0].Messages != want {
			t.Errorf("gamma: got %d messages, want the transcript's %d", list[0].Messages, want)
		}
	})
	t.Run("list with no sessions", func(t *testing.T) {
		o := opts
		o.Dir = filepath.Join(t.TempDir(), "none")
		if list, err := List(o); err != nil || len(list) != 0 {
			t.Errorf("got %v, %v; want no sessions and no error", list, err)
		}
	})
	t.Run("inspect", func(t *testing.T) {
		in, err := Inspect(opts, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if in.StateFile.Check != StateCurrent {
			t.Errorf("state.json: got %+v, want current", in.StateFile)
		}
		if !sameState(in.State, live) {
			t.Errorf("inspected state: %s", stateDiff(live, in.State))
		}
		if len(in.Blocks) != len(live.Blocks) {
			t.Fatalf("got %d blocks, want %d", len(in.Blocks), len(live.Blocks))
		}
		absorbed, tier2 := 0, 0
		for i, b := range in.Blocks {
			if b.BlockID != live.Blocks[i].BlockID || b.ArchiveMissing || b.Archive != live.Blocks[i].ArchivePath {
				t.Errorf("block %d: got %s at %s (missing %v), want %s at %s", i, b.BlockID, b.Archive, b.ArchiveMissing, live.Blocks[i].BlockID, live.Blocks[i].ArchivePath)
			}
			if b.Tier == 1 && !strings.HasPrefix(b.Archive, filepath.Join(h.Dir(), ArchiveDir, "tier1")) {
				t.Errorf("block %s: archive %s is not under tier1", b.BlockID, b.Archive)
			}
			if !b.Active {
				absorbed++
				if b.AbsorbedBy == "" {
					t.Errorf("inactive block %s names no block that absorbed it", b.BlockID)
				}
			}
			if b.Tier == 2 {
				tier2++
			}
			if b.CoveredTokens <= b.SummaryTokens {
				t.Errorf("block %s: covers %d tokens with a %d-token summary, want a saving", b.BlockID, b.CoveredTokens, b.SummaryTokens)
			}
		}
		if absorbed == 0 || tier2 == 0 {
			t.Errorf("got %d absorbed and %d tier-2 blocks, want some of each in the fixture", absorbed, tier2)
		}
		if in.Messages != len(h.Messages()) || in.ToolCalls == 0 || in.ToolCalls >= in.Messages {
			t.Errorf("got %d messages, %d tool calls; want %d messages, some of them calls", in.Messages, in.ToolCalls, len(h.Messages()))
		}
	})
	t.Run("inspect unknown", func(t *testing.T) {
		if _, err := Inspect(opts, "nope"); err == nil || !strings.Contains(err.Error(), `no session "nope"`) {
			t.Errorf("got %v, want a no-such-session error", err)
		}
	})
	t.Run("read original", func(t *testing.T) {
		bl := live.Blocks[0]
		got, err := ReadOriginal(opts, "alpha", bl.BlockID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(bl.ArchivePath)
		if !bytes.Equal(got, want) {
			t.Errorf("archive %s: got %d bytes, want the file's %d bytes verbatim", bl.BlockID, len(got), len(want))
		}
		if _, err := ReadOriginal(opts, "alpha", "b999"); err == nil || !strings.Contains(err.Error(), "its blocks are b1") {
			t.Errorf("got %v, want an error listing the blocks", err)
		}
	})
	t.Run("rebuild", func(t *testing.T) {
		// Lose state.json and one archive; rebuild restores both.
		os.Remove(filepath.Join(h.Dir(), StateFile))
		lost := live.Blocks[len(live.Blocks)-1]
		os.Remove(lost.ArchivePath)
		rep, err := Rebuild(opts, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if rep.Before.Check != StateMissing || !slices.Contains(rep.Recreated, lost.ArchiveRel) || rep.Blocks != len(live.Blocks) || rep.Replayed < 2 {
			t.Errorf("got report %+v, want state.json missing before, %s recreated, %d blocks", rep, lost.ArchiveRel, len(live.Blocks))
		}
		saved, ok, err := readState(filepath.Join(h.Dir(), StateFile))
		if err != nil || !ok || !sameState(saved.State, live) || saved.Seq != rep.Seq {
			t.Errorf("rebuilt state.json differs from the live state (%v %v)", ok, err)
		}
		if _, err := os.Stat(lost.ArchivePath); err != nil {
			t.Errorf("archive not recreated: %v", err)
		}
		if in, _ := Inspect(opts, "alpha"); in.StateFile.Check != StateCurrent {
			t.Errorf("after rebuild state.json is %+v, want current", in.StateFile)
		}
	})
}
