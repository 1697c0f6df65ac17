package noa

import (
	"fmt"
	"reflect"
	"testing"
)

// checkView asserts that a projected view keeps every tool exchange and
// every reasoning turn of the history whole: all of it visible or none.
func checkView(t *testing.T, step string, history, view []CoreMessage) {
	t.Helper()
	visible := make(map[string]bool, len(view))
	calls := map[string]bool{}
	for _, m := range view {
		visible[m.ID] = true
		if m.ContentType == CTToolCall {
			calls[m.ToolCallID] = true
		}
	}
	for _, m := range view {
		if m.ContentType == CTToolResult && !calls[m.ToolCallID] {
			t.Fatalf("%s: result %s is visible without its call", step, m.ID)
		}
	}
	for _, m := range history {
		if m.ContentType == CTToolResult && calls[m.ToolCallID] && !visible[m.ID] {
			t.Fatalf("%s: call %s is visible but its result %s is not", step, m.ToolCallID, m.ID)
		}
	}
	for _, g := range ComputeTurnGroups(history) {
		if len(g.ReasoningIdx) == 0 {
			continue
		}
		n, seen := 0, 0
		for _, s := range [][]int{g.ReasoningIdx, g.ActIdx} {
			for _, i := range s {
				n++
				if visible[history[i].ID] {
					seen++
				}
			}
		}
		if seen != 0 && seen != n {
			t.Fatalf("%s: reasoning turn at %d split: %d of %d reasoning/act messages visible", step, g.ReasoningIdx[0], seen, n)
		}
	}
}

func TestPropertiesRandomSessions(t *testing.T) {
	t.Parallel()
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomSession(t, seed) })
	}
}

func runRandomSession(t *testing.T, seed int64) {
	cfg := DefaultConfig(20000 + int(seed)*1000)
	cfg.ProtectedTools = []string{"memory:*"}
	cfg.Tiers.Tier2Trigger, cfg.Tiers.Tier3Trigger = 3, 2
	cfg.Compress.MinCompressRange = 500
	if seed%3 == 0 {
		cfg.Tiers.MaxTier = 2
	}
	h := newSimHost(t, cfg, seed)
	rnd := h.c.rng
	h.c.user(20)
	everRef := map[string]string{}
	for step := 0; step < 120; step++ {
		h.c.randomTurn("memory:store")
		name := fmt.Sprintf("seed %d step %d", seed, step)

		msgsBefore, stBefore := deepCopyMsgs(h.c.msgs), CloneState(h.st)
		tokens := 0
		if rnd.Intn(2) == 0 {
			tokens = rnd.Intn(cfg.ModelContextLimit * 11 / 10)
		}
		r := ProcessTurn(ProcessTurnInput{Messages: h.c.msgs, State: h.st, Config: cfg, TokenCount: tokens})
		if !reflect.DeepEqual(msgsBefore, h.c.msgs) {
			t.Fatalf("%s: ProcessTurn mutated its messages:\n%s", name, cmpDiff(msgsBefore, h.c.msgs))
		}
		if !reflect.DeepEqual(stBefore, h.st) {
			t.Fatalf("%s: ProcessTurn mutated its state:\n%s", name, cmpDiff(stBefore, h.st))
		}
		h.st = r.State
		checkView(t, name+" (turn)", h.c.msgs, r.Messages)

		// Refs, once assigned, never change.
		for raw, ref := range everRef {
			if got := h.st.MessageRefs.ByRaw[raw]; got != ref {
				t.Fatalf("%s: ref of %s changed from %s to %s", name, raw, ref, got)
			}
		}
		for raw, ref := range h.st.MessageRefs.ByRaw {
			everRef[raw] = ref
			if ref != BlockedRef && h.st.MessageRefs.ByRef[ref] != raw {
				t.Fatalf("%s: ByRef[%s] = %s, want %s", name, ref, h.st.MessageRefs.ByRef[ref], raw)
			}
		}

		// Random compressions: obeying a nudge, arbitrary ref pairs, block
		// ranges, junk.
		compressed := true
		switch k := rnd.Intn(8); {
		case r.Nudge != nil && k < 5:
			h.obey(r.Nudge)
		case k == 5 && len(h.st.MessageRefs.ByRef) > 4:
			hi := HighestUsedIndex(h.st.MessageRefs)
			a, b := 1+rnd.Intn(hi), 1+rnd.Intn(hi)
			h.compress([]CompressRange{rng(IndexToRef(a), IndexToRef(b))})
		case k == 6:
			act := ActiveBlocks(h.st)
			if len(act) >= 2 {
				i := rnd.Intn(len(act) - 1)
				h.compress([]CompressRange{{StartRef: act[i].BlockID, EndRef: act[i+1+rnd.Intn(len(act)-i-1)].BlockID, Summary: okSummary}})
			}
		case k == 7 && rnd.Intn(4) == 0:
			h.compress([]CompressRange{rng("m"+fmt.Sprint(rnd.Intn(500)), "zz")})
		default:
			compressed = false
		}
		if compressed {
			checkView(t, name+" (after compress)", h.c.msgs, ProjectView(h.c.msgs, h.st, cfg))
		}

		// No message is covered by two active blocks.
		owner := map[string]string{}
		for _, b := range h.st.Blocks {
			if !b.Active {
				continue
			}
			for _, id := range b.EffectiveMessageIDs {
				if o, dup := owner[id]; dup {
					t.Fatalf("%s: %s covered by both %s and %s", name, id, o, b.BlockID)
				}
				owner[id] = b.BlockID
			}
		}
	}
	h.turn()
	rb := RebuildStateFromLog(RebuildInput{Messages: h.c.msgs, Config: cfg, Archiver: newMemArchiver(),
		SessionID: "sim", ArchiveRoot: "/archive", CreatedAt: "2026-01-01T00:00:00Z", Now: 1000})
	if diff := cmpDiff(durableOf(h.st), durableOf(rb.State)); diff != "" {
		t.Fatalf("seed %d: rebuilt state differs (-live +rebuilt):\n%s\nwarnings %v", seed, diff, rb.Warnings)
	}
	if len(h.st.Blocks) == 0 {
		t.Fatalf("seed %d: the session never compressed anything; the property run is vacuous", seed)
	}
}
