package noa

import (
	"strings"
	"testing"
)

func TestRebuildStateFromLog(t *testing.T) {
	cfg := testConfig()
	h := newSimHost(t, cfg, 11)
	h.c.user(30)
	for i := 0; i < 40; i++ {
		h.c.tool("fetch", 80)
	}
	h.turn()
	ok1 := h.compress([]CompressRange{rng("m00002", "m00021")})
	bad := h.compress([]CompressRange{rng("m00500", "m00600")}) // unknown refs: fails, recorded
	for i := 0; i < 10; i++ {
		h.c.tool("fetch", 80)
	}
	h.turn()
	ok2 := h.compress([]CompressRange{rng("m00022", "m00041"), rng("m00042", "m00051")})
	h.turn()
	ok3 := h.compress([]CompressRange{{StartRef: "b1", EndRef: "b3", Summary: "Source: b1+b2+b3 distilled; outcome recorded", Topic: "t2"}})
	h.turn()
	if len(ok1.BlocksCreated) != 1 || len(bad.BlocksCreated) != 0 || len(ok2.BlocksCreated) != 2 || len(ok3.BlocksCreated) != 1 {
		t.Fatalf("setup: %v %v %v %v", ok1.Errors, bad.Errors, ok2.Errors, ok3.Errors)
	}
	if ok3.BlocksCreated[0].Tier != 2 {
		t.Fatalf("setup: consolidation produced tier %d", ok3.BlocksCreated[0].Tier)
	}
	arch := newMemArchiver()
	rb := RebuildStateFromLog(RebuildInput{Messages: h.c.msgs, Config: cfg, Archiver: arch, SessionID: "sim", ArchiveRoot: "/archive",
		CreatedAt: "2026-01-01T00:00:00Z", Now: 1000})
	if rb.Replayed != 3 || rb.Skipped != 1 || len(rb.Warnings) != 0 {
		t.Errorf("replayed %d skipped %d warnings %v; want 3, 1, none", rb.Replayed, rb.Skipped, rb.Warnings)
	}
	if diff := cmpDiff(durableOf(h.st), durableOf(rb.State)); diff != "" {
		t.Errorf("rebuilt state differs (-live +rebuilt):\n%s", diff)
	}
	// Summaries come back byte for byte, and the archives are rewritten.
	for i, b := range h.st.Blocks {
		if rb.State.Blocks[i].Summary != b.Summary {
			t.Errorf("summary of %s differs", b.BlockID)
		}
	}
	if got, want := arch.paths(), h.arch.paths(); cmpDiff(want, got) != "" {
		t.Errorf("archives rewritten %v, want %v", got, want)
	}
	// The ref map covers messages after the last compression too.
	if rb.State.MessageRefs.ByRaw[h.c.msgs[len(h.c.msgs)-3].ID] == "" {
		t.Errorf("late messages have no refs")
	}

	// A call with no recorded result is skipped with a warning.
	cut := h.c.msgs[:len(h.c.msgs)-1]
	rb = RebuildStateFromLog(RebuildInput{Messages: cut, Config: cfg, Archiver: newMemArchiver(), SessionID: "sim", ArchiveRoot: "/archive"})
	if rb.Replayed != 2 || len(rb.Warnings) != 1 || !strings.Contains(rb.Warnings[0], "no recorded result") {
		t.Errorf("replayed %d warnings %v", rb.Replayed, rb.Warnings)
	}
	// Empty history gives the initial state.
	rb = RebuildStateFromLog(RebuildInput{Config: cfg, SessionID: "x", ArchiveRoot: "/r"})
	if rb.Replayed != 0 || rb.State.SessionID != "x" || rb.State.ArchiveRoot != "/r" || rb.State.NextBlockID != 1 {
		t.Errorf("empty rebuild: %+v", rb)
	}
}
