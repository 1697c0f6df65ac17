package noa

import (
	"fmt"
	"math"
)

// NudgeBreakdown is the diagnostic detail behind a nudge decision: the first
// thing to read when nudges fire too often or not at all.
type NudgeBreakdown struct {
	Usage              float64
	Growth             int
	GrowthReference    int
	GrowthFloor        int
	AdaptiveGrowth     int
	OverLimit          bool
	Emergency          bool
	MinPressureBenefit int
	// PendingT1 is the reclaimable raw conversation (viable ranges);
	// PendingT2 and PendingT3 the tokens held by tier-1 and tier-2 summaries.
	PendingT1 int
	PendingT2 int
	PendingT3 int
	CountT1   int
	CountT2   int
}

// NudgeDecision is DecideNudge's structured output; RenderNudgeText turns it
// into text.
type NudgeDecision struct {
	ShouldInject bool
	// Reason explains the decision whether or not it injected.
	Reason string
	// Tier is the tier being asked for; 0 when nothing is injected.
	Tier               Tier
	ContextUsage       float64
	CompressibleRanges []RangeInfo
	ProtectedRanges    []ProtectedRange
	ActiveBlockSpans   []BlockSpan
	// TierTargetBlocks are the blocks a tier-2/3 nudge asks to consolidate
	// (full blocks, since the renderer shows counts, sizes and topics).
	TierTargetBlocks []CompressionBlock
	Breakdown        NudgeBreakdown
	// ContextBreakdown buckets the context: summaries, tool, system, code,
	// text.
	ContextBreakdown map[string]int
	// TruncatedCount is how many tool results were cut this turn.
	TruncatedCount int
}

// DecideNudgeInput is one turn's pressure picture.
type DecideNudgeInput struct {
	Messages   []CoreMessage
	State      CompressionState
	Config     Config
	TokenCount int
	// Recommendation is the compressible/protected split for this turn.
	Recommendation Recommendation
	CountTokens    TokenCountFn
	// TruncatedCount is how many tool results were mechanically shortened.
	TruncatedCount int
}

// DecideNudge decides whether to ask the model to compress, and for what.
//
// Two bands behave differently on purpose. Under pressure (usage at or above
// MaxContextLimitPct) there is no growth gate, only a minimum benefit: the
// window is nearly full and waiting is not a strategy. Below it, a nudge is
// an efficiency suggestion: it fires only once usage reaches
// MinContextLimitPct, the context has grown by a full cadence step
// (NudgeGrowthFloor) since the last nudge, and at least a cadence step is
// reclaimable. Tier-2/3 nudges fire by count of active lower-tier blocks (or
// by the tokens their summaries hold), each tier paced on its own. After
// MaxCompressAttempts consecutive failed or ignored attempts nudging is
// suppressed until the context grows by a cadence step.
func DecideNudge(in DecideNudgeInput) NudgeDecision {
	cfg := in.Config
	count := countFn(in.CountTokens)
	rec := in.Recommendation
	d := NudgeDecision{
		CompressibleRanges: rec.CompressibleRanges,
		ProtectedRanges:    rec.ProtectedRanges,
		ActiveBlockSpans:   ActiveBlockSpans(in.State),
		ContextBreakdown:   ComputeContextBreakdown(in.Messages, count),
		TruncatedCount:     in.TruncatedCount,
	}
	limit := cfg.ModelContextLimit
	if limit <= 0 {
		d.Reason = "no context limit configured"
		return d
	}
	usage := float64(in.TokenCount) / float64(limit)
	d.ContextUsage = usage
	b := &d.Breakdown
	b.Usage = usage
	b.AdaptiveGrowth = adaptiveGrowth(cfg)
	b.GrowthFloor = NudgeGrowthFloor(cfg)
	b.GrowthReference = in.State.Nudge.LastPerMessageNudgeTokens
	b.Growth = in.TokenCount - b.GrowthReference
	b.OverLimit = usage >= cfg.Nudge.MaxContextLimitPct
	b.Emergency = usage >= cfg.Nudge.EmergencyThresholdPct
	b.MinPressureBenefit = minPressureBenefit(cfg)
	for _, r := range rec.CompressibleRanges {
		b.PendingT1 += r.Tokens
	}
	var t1, t2 []CompressionBlock
	for _, blk := range in.State.Blocks {
		if !blk.Active {
			continue
		}
		n := count(RenderSummaryMessage(blk).Text)
		switch blk.Tier {
		case 1:
			t1 = append(t1, cloneBlock(blk))
			b.PendingT2 += n
		case 2:
			t2 = append(t2, cloneBlock(blk))
			b.PendingT3 += n
		}
	}
	b.CountT1, b.CountT2 = len(t1), len(t2)
	diag := fmt.Sprintf("usage %.1f%%, growth %d/%d, pending t1=%d t2=%d t3=%d, blocks t1=%d t2=%d",
		usage*100, b.Growth, b.GrowthFloor, b.PendingT1, b.PendingT2, b.PendingT3, b.CountT1, b.CountT2)

	if lim := cfg.MaxCompressAttempts; lim > 0 && in.State.Stats.ConsecutiveFailures >= lim {
		at := in.State.Stats.SuppressedAtTokens
		if at == 0 {
			at = in.TokenCount
		}
		if grown := in.TokenCount - at; grown < b.GrowthFloor {
			d.Reason = fmt.Sprintf("suppressed after %d consecutive failed or ignored attempts; resumes after %d more tokens of growth (%s)",
				in.State.Stats.ConsecutiveFailures, b.GrowthFloor-grown, diag)
			return d
		}
	}
	if usage < cfg.Nudge.MinContextLimitPct {
		d.Reason = "below the first-sight floor (" + diag + ")"
		return d
	}

	inject := func(t Tier, why string) NudgeDecision {
		d.ShouldInject = true
		d.Tier = t
		d.Reason = why + " (" + diag + ")"
		switch t {
		case 2:
			d.TierTargetBlocks = t1
		case 3:
			d.TierTargetBlocks = t2
		}
		return d
	}
	paced := func(t Tier) bool {
		last := in.State.Nudge.LastShownByTier[t]
		return last == 0 || b.OverLimit || in.TokenCount-last >= b.GrowthFloor || in.TokenCount < last
	}
	tierThreshold := int(math.Round(float64(b.AdaptiveGrowth) * cfg.Nudge.Tier2GrowthMultiplier))
	pressureT1 := b.OverLimit && b.PendingT1 >= b.MinPressureBenefit && !rec.NothingToCompress

	// In an emergency raw conversation reclaims the most; it goes first.
	if !(b.Emergency && pressureT1) && cfg.Tiers.Enabled {
		if maxTier(cfg) >= 3 && len(t2) >= 2 && (len(t2) >= cfg.Tiers.Tier3Trigger || b.PendingT3 >= tierThreshold) && paced(3) {
			return inject(3, fmt.Sprintf("tier 3: %d tier-2 blocks to condense", len(t2)))
		}
		if len(t1) >= 2 && (len(t1) >= cfg.Tiers.Tier2Trigger || b.PendingT2 >= tierThreshold) && paced(2) {
			return inject(2, fmt.Sprintf("tier 2: %d tier-1 blocks to distil", len(t1)))
		}
	}
	if rec.NothingToCompress {
		d.Reason = "nothing compressible (" + diag + ")"
		return d
	}
	if b.OverLimit {
		if b.PendingT1 >= b.MinPressureBenefit {
			return inject(1, "pressure band")
		}
		d.Reason = fmt.Sprintf("pressure band, but only %d reclaimable (< %d)", b.PendingT1, b.MinPressureBenefit) + " (" + diag + ")"
		return d
	}
	if b.Growth < b.GrowthFloor {
		d.Reason = "waiting for growth (" + diag + ")"
		return d
	}
	if b.PendingT1 < b.GrowthFloor {
		d.Reason = "too little to reclaim (" + diag + ")"
		return d
	}
	return inject(1, "growth cadence")
}
