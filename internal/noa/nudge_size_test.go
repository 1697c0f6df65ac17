package noa

import (
	"fmt"
	"strings"
	"testing"
)

// TestNudgeBoundedAndMerged: over many shapes of history and windows, every
// nudge ProcessTurn injects stays under NudgeMaxTokens (the engine's
// counter), carries no rules (they are resident), and a tier-1 nudge names
// at most MaxRecommendedRanges ordered, disjoint ranges covering most of
// what is reclaimable (issue 27: one nudge listed ~8,000 characters of tiny
// alternating ranges).
func TestNudgeBoundedAndMerged(t *testing.T) {
	t.Parallel()
	longTopic := strings.Repeat("a very long topic written by the model ", 8)
	shapes := []struct {
		name string
		turn func(c *convo, i int)
	}{
		{"alternating tiny ranges", func(c *convo, i int) {
			c.tool("memory:store", 5)
			c.tool("fetch", 140+i%7)
		}},
		{"random mix", func(c *convo, _ int) { c.randomTurn("memory:store") }},
		{"many protected tools", func(c *convo, i int) {
			c.tool(fmt.Sprintf("memory:store_with_a_rather_long_tool_name_number_%d", i%9), 10)
			c.tool("fetch", 120)
		}},
		{"user turns everywhere", func(c *convo, i int) {
			c.user(10 + i%20)
			c.tool("fetch", 150)
			c.assistant(30)
		}},
		{"big tool results", func(c *convo, i int) {
			c.reasoning(10)
			c.tool("Read", 600+i%400)
		}},
	}
	for _, sh := range shapes {
		for _, window := range []int{20000, 40000, 200000} {
			t.Run(fmt.Sprintf("%s/%d", sh.name, window), func(t *testing.T) {
				cfg := DefaultConfig(window)
				cfg.ProtectedTools = []string{"memory:*"}
				h := newSimHost(t, cfg, int64(window))
				h.c.user(40)
				nudges, worst, minCover := 0, 0, 1.0
				for i := 0; i < 800 && nudges < 8; i++ {
					sh.turn(h.c, i)
					r := h.turn()
					if r.Nudge == nil {
						continue
					}
					nudges++
					text := r.Messages[len(r.Messages)-1].Text
					for _, tc := range []struct {
						name string
						d    NudgeDecision
					}{{"as injected", *r.Nudge}, {"emergency", emergencyOf(*r.Nudge)}} {
						_, text := RenderNudgeText(tc.d, NudgeSections{})
						n := DefaultCountTokens(text)
						worst = max(worst, n)
						if n > NudgeMaxTokens {
							t.Fatalf("turn %d: %s nudge is %d tokens, want at most %d:\n%s", i, tc.name, n, NudgeMaxTokens, text)
						}
					}
					if strings.Contains(text, "COPY EXACTLY") || strings.Contains(text, "KEEP —") {
						t.Fatalf("turn %d: the nudge repeats the rules:\n%s", i, text)
					}
					d := r.Nudge
					if d.Tier == 1 {
						rs := d.CompressibleRanges
						if len(rs) == 0 || len(rs) > MaxRecommendedRanges {
							t.Fatalf("turn %d: got %d ranges, want 1 to %d:\n%s", i, len(rs), MaxRecommendedRanges, text)
						}
						sum, prev := 0, 0
						for _, rg := range rs {
							lo, _ := RefToIndex(rg.StartRef)
							hi, _ := RefToIndex(rg.EndRef)
							if lo <= prev || hi < lo {
								t.Fatalf("turn %d: ranges overlap or are out of order: %+v", i, rs)
							}
							prev = hi
							sum += rg.Tokens
						}
						cover := float64(sum) / float64(max(d.Breakdown.PendingT1, 1))
						minCover = min(minCover, cover)
						if cover < 0.75 {
							t.Fatalf("turn %d: the ranges hold %d of %d reclaimable tokens, want at least 75%%:\n%s", i, sum, d.Breakdown.PendingT1, text)
						}
					}
					obeyWithTopic(h, d, longTopic)
				}
				if nudges == 0 {
					t.Fatalf("no nudge in this shape")
				}
				t.Logf("%d nudges, largest %d tokens, least coverage %.2f", nudges, worst, minCover)
			})
		}
	}
}

// emergencyOf is d rendered in the urgent voice with cuts to report.
func emergencyOf(d NudgeDecision) NudgeDecision {
	d.Breakdown.Emergency, d.ContextUsage, d.TruncatedCount = true, 0.97, 12
	return d
}

// obeyWithTopic is simHost.obey with a long model-written topic.
func obeyWithTopic(h *simHost, d *NudgeDecision, topic string) {
	var ranges []CompressRange
	switch d.Tier {
	case 2, 3:
		b := d.TierTargetBlocks
		ranges = append(ranges, CompressRange{StartRef: b[0].BlockID, EndRef: b[len(b)-1].BlockID,
			Summary: "Source: distilled. Outcome: the work in these blocks is done; see archive.", Topic: topic})
	default:
		for _, r := range d.CompressibleRanges {
			ranges = append(ranges, CompressRange{StartRef: r.StartRef, EndRef: r.EndRef,
				Summary: fmt.Sprintf("Summary of %s-%s: tool work read and its facts extracted; TASK AS OF THIS BLOCK: continue.", r.StartRef, r.EndRef),
				Topic:   topic})
		}
	}
	h.compress(ranges)
}
