package noa

import (
	"fmt"
	"strings"
	"testing"
)

// simHost plays the host side of noa (what internal/session does): it keeps
// the history and the state, runs ProcessTurn every turn, and applies the
// scripted model's Compress calls against ProjectView.
type simHost struct {
	t     testing.TB
	cfg   Config
	c     *convo
	st    CompressionState
	arch  *memArchiver
	now   int64
	fails int
}

func newSimHost(t testing.TB, cfg Config, seed int64) *simHost {
	return &simHost{t: t, cfg: cfg, c: newConvo(seed), st: CreateInitialState("sim", "/archive"), arch: newMemArchiver()}
}

func (h *simHost) turn() ProcessTurnResult {
	r := ProcessTurn(ProcessTurnInput{Messages: h.c.msgs, State: h.st, Config: h.cfg})
	h.st = r.State
	return r
}

// obey compresses what the nudge recommends, with synthetic summaries.
func (h *simHost) obey(d *NudgeDecision) ApplyResult {
	var ranges []CompressRange
	switch d.Tier {
	case 2, 3:
		blocks := d.TierTargetBlocks
		ranges = append(ranges, CompressRange{
			StartRef: blocks[0].BlockID, EndRef: blocks[len(blocks)-1].BlockID,
			Summary: fmt.Sprintf("Source: %s..%s distilled to tier %d. Outcome: the work in these blocks is done; see archive.", blocks[0].BlockID, blocks[len(blocks)-1].BlockID, d.Tier),
			Topic:   fmt.Sprintf("tier %d consolidation", d.Tier),
		})
	default:
		for _, r := range d.CompressibleRanges {
			ranges = append(ranges, CompressRange{
				StartRef: r.StartRef, EndRef: r.EndRef,
				Summary: fmt.Sprintf("Summary of %s-%s: %d messages of tool work were read and their facts extracted; TASK AS OF THIS BLOCK: continue.", r.StartRef, r.EndRef, r.Count),
				Topic:   "tool work",
			})
		}
	}
	return h.compress(ranges)
}

func (h *simHost) compress(ranges []CompressRange) ApplyResult {
	view := ProjectView(h.c.msgs, h.st, h.cfg)
	before := sizeOf(view)
	call := h.c.compressCall(ranges)
	h.now++
	ar := ApplyCompression(ApplyInput{
		Ranges: ranges, Messages: view, State: h.st, Config: h.cfg, CallID: call.ToolCallID,
		Archiver: h.arch, CreatedAt: "2026-01-01T00:00:00Z", Now: 1000,
	})
	h.st = ar.State
	afterView := ProjectView(h.c.msgs, h.st, h.cfg)
	panel := FormatPanel(PanelInput{Result: ar, BeforeTokens: before, AfterTokens: sizeOf(afterView), Messages: afterView})
	h.c.compressResult(call, panel)
	if len(ar.BlocksCreated) == 0 {
		h.fails++
	}
	return ar
}

func sizeOf(msgs []CoreMessage) int {
	n := 0
	for _, m := range msgs {
		n += CountMessageTokens(m, nil)
	}
	return n
}

func TestLongSessionSimulation(t *testing.T) {
	t.Parallel()
	const limit = 24000
	cfg := DefaultConfig(limit)
	cfg.Tiers.Tier2Trigger = 4
	cfg.Tiers.Tier3Trigger = 3
	h := newSimHost(t, cfg, 42)
	h.c.user(40)
	maxSeen, nudges, pressure, truncated := 0, 0, 0, 0
	tiers := map[Tier]int{}
	for turn := 0; turn < 600; turn++ {
		switch {
		case turn%60 == 59:
			// A burst: one huge output pushes the context toward the
			// pressure band regardless of cadence.
			h.c.tool("fetch", 4000)
		case turn%25 == 0:
			h.c.user(20 + h.c.rng.Intn(40))
		case turn%7 == 0:
			h.c.reasoning(30)
			h.c.parallel("read", 2, 60+h.c.rng.Intn(150))
		default:
			h.c.tool("fetch", 80+h.c.rng.Intn(500))
		}
		r := h.turn()
		size := sizeOf(r.Messages)
		maxSeen = max(maxSeen, size)
		if size > limit {
			t.Fatalf("turn %d: projected context %d exceeds the limit %d (nudge: %v)", turn, size, limit, r.Nudge != nil)
		}
		truncated += r.TruncatedCount
		if r.Nudge != nil {
			nudges++
			if r.Nudge.Breakdown.OverLimit {
				pressure++
			}
			ar := h.obey(r.Nudge)
			for _, b := range ar.BlocksCreated {
				tiers[b.Tier]++
			}
			if len(ar.Errors) > 0 {
				t.Logf("turn %d tier %d: errors %v", turn, r.Nudge.Tier, ar.Errors)
			}
			h.turn()
		}
	}
	t.Logf("max projected %d of %d; nudges %d (%d under pressure); truncated results %d; blocks by tier %v; failed calls %d; archives %d",
		maxSeen, limit, nudges, pressure, truncated, tiers, h.fails, len(h.arch.files))
	if pressure == 0 {
		t.Errorf("the session never reached the pressure band; the bursts should push it there")
	}
	if tiers[2] == 0 || tiers[3] == 0 {
		t.Fatalf("got blocks by tier %v, want tier 2 and tier 3 reached", tiers)
	}
	if h.fails > nudges/10 {
		t.Errorf("got %d failed Compress calls out of %d nudges; the scripted model follows every recommendation, so nearly all should succeed", h.fails, nudges)
	}

	// Every original message that left the view is in some archive, verbatim.
	final := ProjectView(h.c.msgs, h.st, h.cfg)
	visible := map[string]bool{}
	for _, m := range final {
		visible[m.ID] = true
	}
	var all strings.Builder
	for _, f := range h.arch.snapshot() {
		all.WriteString(f)
	}
	archived := all.String()
	everCovered := map[string]bool{}
	for _, b := range h.st.Blocks {
		for _, id := range b.DirectMessageIDs {
			everCovered[id] = true
		}
	}
	checked := 0
	for _, m := range h.c.msgs {
		if m.ToolName == CompressToolName {
			continue
		}
		if !everCovered[m.ID] {
			if !visible[m.ID] {
				t.Errorf("message %s is neither visible nor covered by any block", m.ID)
			}
			continue
		}
		checked++
		if !strings.Contains(archived, m.Text) {
			t.Fatalf("message %s was compressed but its text is not verbatim in any archive", m.ID)
		}
	}
	if checked < len(h.c.msgs)/2 {
		t.Errorf("only %d of %d messages were ever compressed", checked, len(h.c.msgs))
	}

	// The state rebuilt from the log equals the live one.
	rb := RebuildStateFromLog(RebuildInput{Messages: h.c.msgs, Config: cfg, Archiver: newMemArchiver(),
		SessionID: "sim", ArchiveRoot: "/archive", CreatedAt: "2026-01-01T00:00:00Z", Now: 1000})
	if diff := cmpDiff(durableOf(h.st), durableOf(rb.State)); diff != "" {
		t.Fatalf("rebuilt state differs from live (-live +rebuilt):\n%s\nwarnings: %v", diff, rb.Warnings)
	}
}
