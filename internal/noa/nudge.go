package noa

import (
	"fmt"
	"math"
)

// NudgeBreakdown holds the numbers a nudge decision was based on. It exists
// for debugging pacing: log it when nudges seem too frequent or never come.
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
	// Reason says why a nudge was or was not added; set in both cases.
	Reason string
	// Tier: which tier the nudge requests; 0 if no nudge.
	Tier               Tier
	ContextUsage       float64
	CompressibleRanges []RangeInfo
	ProtectedRanges    []ProtectedRange
	ActiveBlockSpans   []BlockSpan
	// TierTargetBlocks: for a tier-2/3 nudge, the blocks it wants merged.
	// Whole blocks are kept because the text lists their sizes and topics.
	TierTargetBlocks []CompressionBlock
	Breakdown        NudgeBreakdown
	// ContextBreakdown: see ComputeContextBreakdown.
	ContextBreakdown map[string]int
	// TruncatedCount: tool results shortened by emergency truncation now.
	TruncatedCount int
}

// DecideNudgeInput gathers what DecideNudge weighs for a turn.
type DecideNudgeInput struct {
	Messages   []CoreMessage
	State      CompressionState
	Config     Config
	TokenCount int
	// Recommendation: this turn's result of BuildRecommendation.
	Recommendation Recommendation
	CountTokens    TokenCountFn
	// TruncatedCount: tool results emergency truncation shortened.
	TruncatedCount int
}

// DecideNudge chooses whether this turn carries a nudge and which tier it
// asks for.
//
// The rules differ by usage. From MaxContextLimitPct up, growth is ignored
// and only the freeable amount must be large enough, because with the window
// almost full a delay can overflow it. Under that line a nudge is merely
// advice, so it needs usage of at least MinContextLimitPct, growth of one
// cadence step (NudgeGrowthFloor) since the previous nudge, and that much
// or more to free. Tier-2/3 requests depend on how many lower-tier blocks
// are live (or how many tokens their summaries use), with separate spacing
// per tier. MaxCompressAttempts failures or ignored nudges in a row pause
// nudging until usage has risen by another cadence step.
func DecideNudge(in DecideNudgeInput) NudgeDecision {
	count := countFn(in.CountTokens)
	rec := in.Recommendation
	f := tierFactsOf(in.State, count)
	f.pendingT1 = rec.ReclaimableTokens
	if f.pendingT1 == 0 {
		f.pendingT1 = viableTokens(rec.CompressibleRanges)
	}
	f.nothingToCompress = rec.NothingToCompress
	d := decideNudge(in.Config, in.State, in.TokenCount, f)
	d.CompressibleRanges = rec.CompressibleRanges
	d.ProtectedRanges = rec.ProtectedRanges
	d.ActiveBlockSpans = ActiveBlockSpans(in.State)
	d.ContextBreakdown = ComputeContextBreakdown(in.Messages, count)
	d.TruncatedCount = in.TruncatedCount
	return d
}

// nudgeFacts are the aggregates a nudge decision weighs, apart from the
// state's pacing: what the tier-1 recommendation could reclaim, and the
// live tier-1 and tier-2 blocks with what their summaries cost.
type nudgeFacts struct {
	pendingT1         int
	nothingToCompress bool
	// t1 and t2 are copies of the live blocks of those tiers, oldest first.
	t1, t2               []CompressionBlock
	pendingT2, pendingT3 int
}

// tierFactsOf fills the block part of nudgeFacts from the state.
func tierFactsOf(st CompressionState, count TokenCountFn) nudgeFacts {
	var f nudgeFacts
	for _, blk := range st.Blocks {
		if !blk.Active {
			continue
		}
		n := count(RenderSummaryMessage(blk).Text)
		switch blk.Tier {
		case 1:
			f.t1 = append(f.t1, cloneBlock(blk))
			f.pendingT2 += n
		case 2:
			f.t2 = append(f.t2, cloneBlock(blk))
			f.pendingT3 += n
		}
	}
	return f
}

func viableTokens(ranges []RangeInfo) int {
	n := 0
	for _, r := range ranges {
		n += r.Tokens
	}
	return n
}

// nudgeGate is the part of the decision that needs no facts: false when the
// turn cannot carry a nudge whatever there is to compress (no limit, usage
// under the first-sight floor, or suppressed after failed attempts). The
// Engine asks it first and skips gathering facts when it says no.
func nudgeGate(cfg Config, st CompressionState, tokens int) bool {
	limit := cfg.ModelContextLimit
	if limit <= 0 {
		return false
	}
	if suppressedFor(cfg, st, tokens) > 0 {
		return false
	}
	return float64(tokens)/float64(limit) >= cfg.Nudge.MinContextLimitPct
}

// suppressedFor is how many more tokens of growth end a suppression after
// MaxCompressAttempts failed or ignored attempts; 0 when not suppressed.
func suppressedFor(cfg Config, st CompressionState, tokens int) int {
	lim := cfg.MaxCompressAttempts
	if lim <= 0 || st.Stats.ConsecutiveFailures < lim {
		return 0
	}
	at := st.Stats.SuppressedAtTokens
	if at == 0 {
		at = tokens
	}
	floor := NudgeGrowthFloor(cfg)
	if grown := tokens - at; grown < floor {
		return floor - grown
	}
	return 0
}

// decideNudge is DecideNudge on aggregates; the caller adds the lists the
// text is rendered from (ranges, block spans, context breakdown).
func decideNudge(cfg Config, st CompressionState, tokens int, f nudgeFacts) NudgeDecision {
	var d NudgeDecision
	limit := cfg.ModelContextLimit
	if limit <= 0 {
		d.Reason = "no context limit configured"
		return d
	}
	usage := float64(tokens) / float64(limit)
	d.ContextUsage = usage
	b := &d.Breakdown
	b.Usage = usage
	b.AdaptiveGrowth = adaptiveGrowth(cfg)
	b.GrowthFloor = NudgeGrowthFloor(cfg)
	b.GrowthReference = st.Nudge.LastPerMessageNudgeTokens
	b.Growth = tokens - b.GrowthReference
	b.OverLimit = usage >= cfg.Nudge.MaxContextLimitPct
	b.Emergency = usage >= cfg.Nudge.EmergencyThresholdPct
	b.MinPressureBenefit = minPressureBenefit(cfg)
	b.PendingT1 = f.pendingT1
	b.PendingT2, b.PendingT3 = f.pendingT2, f.pendingT3
	b.CountT1, b.CountT2 = len(f.t1), len(f.t2)
	diag := fmt.Sprintf("usage %.1f%%, growth %d/%d, pending t1=%d t2=%d t3=%d, blocks t1=%d t2=%d",
		usage*100, b.Growth, b.GrowthFloor, b.PendingT1, b.PendingT2, b.PendingT3, b.CountT1, b.CountT2)

	if left := suppressedFor(cfg, st, tokens); left > 0 {
		d.Reason = fmt.Sprintf("suppressed after %d consecutive failed or ignored attempts; resumes after %d more tokens of growth (%s)",
			st.Stats.ConsecutiveFailures, left, diag)
		return d
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
			d.TierTargetBlocks = f.t1
		case 3:
			d.TierTargetBlocks = f.t2
		}
		return d
	}
	paced := func(t Tier) bool {
		last := st.Nudge.LastShownByTier[t]
		return last == 0 || b.OverLimit || tokens-last >= b.GrowthFloor || tokens < last
	}
	tierThreshold := int(math.Round(float64(b.AdaptiveGrowth) * cfg.Nudge.Tier2GrowthMultiplier))
	pressureT1 := b.OverLimit && b.PendingT1 >= b.MinPressureBenefit && !f.nothingToCompress
	t1, t2 := f.t1, f.t2

	// In an emergency raw conversation reclaims the most; it goes first.
	if !(b.Emergency && pressureT1) && cfg.Tiers.Enabled {
		if maxTier(cfg) >= 3 && len(t2) >= 2 && (len(t2) >= cfg.Tiers.Tier3Trigger || b.PendingT3 >= tierThreshold) && paced(3) {
			return inject(3, fmt.Sprintf("tier 3: %d tier-2 blocks to condense", len(t2)))
		}
		if len(t1) >= 2 && (len(t1) >= cfg.Tiers.Tier2Trigger || b.PendingT2 >= tierThreshold) && paced(2) {
			return inject(2, fmt.Sprintf("tier 2: %d tier-1 blocks to distil", len(t1)))
		}
	}
	if f.nothingToCompress {
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
