package noa

// TierDecision says which tier a range compresses and which tier results.
type TierDecision struct {
	// TargetTier: the lowest tier found in the range, i.e. the layer being
	// summarised; 0 when plain messages are summarised and no block merged.
	TargetTier Tier
	// OutputTier: TargetTier+1, but never above MaxTier; 1 whenever tiers
	// are switched off.
	OutputTier Tier
	// ConsumedBlockIDs: the blocks at TargetTier, which the new block takes in.
	ConsumedBlockIDs []string
	// SurvivingBlockIDs: blocks in the range with a tier above TargetTier;
	// they remain live beside the new block.
	SurvivingBlockIDs []string
}

// DecideTier works out the tiers for a resolved range; tiers advance by one
// level per compression.
//
// Only the lowest tier in the range is merged, and higher-tier blocks are
// left alone, so each piece of content loses detail in one summary at a
// time. A range given in message refs that still contains unsummarised
// messages therefore targets tier 0: it yields a tier-1 block and all blocks
// inside it stay. A range given in block ids also takes in any stray
// messages lying between its blocks, yet those do not force tier 0 (the
// spec's ArchiveEntry allows such strays); if they did, a tier-2 block could
// not be built whenever something sat between two tier-1 blocks.
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

// IsTerminalRewrite is true when a call would merge blocks already at the
// top tier into yet another top-tier block with no fresh messages. That
// would only re-summarise a summary, losing detail and saving nothing.
// Checking TargetTier suffices: at MaxTier the output tier is MaxTier too.
func IsTerminalRewrite(d TierDecision, directCount int, cfg Config) bool {
	return d.TargetTier >= 1 && d.TargetTier >= maxTier(cfg) && directCount == 0
}
