package noa

// TierDecision is the outcome of classifying one resolved range.
type TierDecision struct {
	// TargetTier is the layer being compressed: the lowest tier present in
	// the range. 0 means raw conversation (no block is absorbed).
	TargetTier Tier
	// OutputTier is the new block's tier: one above the target, capped at
	// MaxTier (always 1 when tiers are disabled).
	OutputTier Tier
	// ConsumedBlockIDs are the blocks absorbed: only those at TargetTier.
	ConsumedBlockIDs []string
	// SurvivingBlockIDs are blocks inside the range above TargetTier; they
	// stay active.
	SurvivingBlockIDs []string
}

// DecideTier classifies a resolved range, one tier at a time.
//
// A compression absorbs only the blocks at the lowest tier present; higher
// tiers stay active, so no content goes through more than one lossy pass at
// once. For a message-boundary range that still holds loose conversation the
// lowest tier is the raw messages themselves (TargetTier 0): the result is a
// tier-1 block and every nested block survives. In a block-boundary range,
// loose messages between the blocks are swept into the new block but do not
// pin the target to 0 (spec, ArchiveEntry: "a loose message that was swept
// up"); otherwise tier 2 could never form once anything sat between blocks.
func DecideTier(r ResolvedRange, state CompressionState, cfg Config) TierDecision {
	return decideTier(r, state, cfg, nil)
}

// decideTier is DecideTier with the covered set precomputed (nil = compute).
func decideTier(r ResolvedRange, state CompressionState, cfg Config, covered map[string]bool) TierDecision {
	var nested []CompressionBlock
	for _, id := range r.NestedBlockIDs {
		if b := FindBlock(&state, id); b != nil && b.Active {
			nested = append(nested, *b)
		}
	}
	if len(nested) == 0 {
		return TierDecision{TargetTier: 0, OutputTier: 1}
	}
	if covered == nil {
		covered = CoveredMessageIDs(state)
	}
	if r.Kind == BoundaryMessage && looseCount(r, state, covered) > 0 {
		d := TierDecision{TargetTier: 0, OutputTier: 1}
		for _, b := range nested {
			d.SurvivingBlockIDs = append(d.SurvivingBlockIDs, b.BlockID)
		}
		return d
	}
	if !cfg.Tiers.Enabled {
		d := TierDecision{TargetTier: 1, OutputTier: 1}
		for _, b := range nested {
			d.ConsumedBlockIDs = append(d.ConsumedBlockIDs, b.BlockID)
		}
		return d
	}
	target := nested[0].Tier
	for _, b := range nested {
		target = min(target, b.Tier)
	}
	d := TierDecision{TargetTier: target, OutputTier: min(target+1, maxTier(cfg))}
	for _, b := range nested {
		if b.Tier == target {
			d.ConsumedBlockIDs = append(d.ConsumedBlockIDs, b.BlockID)
		} else {
			d.SurvivingBlockIDs = append(d.SurvivingBlockIDs, b.BlockID)
		}
	}
	return d
}

// looseCount counts addressable, uncovered messages in a resolved range.
func looseCount(r ResolvedRange, state CompressionState, covered map[string]bool) int {
	n := 0
	for _, id := range r.MessageIDs {
		if covered[id] {
			continue
		}
		if _, ok := RefForRaw(state.MessageRefs, id); ok {
			n++
		}
	}
	return n
}

// IsTerminalRewrite reports a compression that would fold terminal-tier
// blocks into another terminal-tier block without any new message: it
// reclaims nothing and only loses detail. By DecideTier, TargetTier ==
// MaxTier implies OutputTier == MaxTier, so the target alone decides.
func IsTerminalRewrite(d TierDecision, directCount int, cfg Config) bool {
	return d.TargetTier >= 1 && d.TargetTier >= maxTier(cfg) && directCount == 0
}
