package noa

import (
	"strings"
	"testing"
)

func tierBlocks(tier Tier, n, firstID int) []CompressionBlock {
	var out []CompressionBlock
	for i := 0; i < n; i++ {
		id := firstID + i
		ref := IndexToRef(id * 10)
		out = append(out, CompressionBlock{BlockID: "b" + itoa(id), Tier: tier, Summary: "summary " + itoa(id), Active: true,
			StartRef: ref, EndRef: ref, EffectiveMessageIDs: []string{"x" + itoa(id)}, CompressedTokens: 4000, Topic: "topic " + itoa(id)})
	}
	return out
}

func TestDecideNudge(t *testing.T) {
	cfg := DefaultConfig(100000)
	if NudgeGrowthFloor(cfg) != 12500 || minPressureBenefit(cfg) != 5000 {
		t.Fatalf("fixture assumptions: cadence %d, benefit %d", NudgeGrowthFloor(cfg), minPressureBenefit(cfg))
	}
	recWith := func(tokens int) Recommendation {
		return Recommendation{CompressibleRanges: []RangeInfo{{StartRef: "m00001", EndRef: "m00040", Count: 40, Tokens: tokens, Chars: tokens * 4}}}
	}
	nothing := Recommendation{NothingToCompress: true}
	for _, tc := range []struct {
		name     string
		tokens   int
		baseline int
		rec      Recommendation
		blocks   []CompressionBlock
		mutate   func(*CompressionState, *Config)
		inject   bool
		tier     Tier
		reason   string
	}{
		{name: "below first sight", tokens: 30000, rec: recWith(20000), reason: "below the first-sight floor"},
		{name: "growth cadence", tokens: 50000, rec: recWith(20000), inject: true, tier: 1, reason: "growth cadence"},
		{name: "waiting for growth", tokens: 50000, baseline: 45000, rec: recWith(20000), reason: "waiting for growth"},
		{name: "too little", tokens: 50000, rec: recWith(3000), reason: "too little to reclaim"},
		{name: "pressure ignores growth", tokens: 80000, baseline: 79000, rec: recWith(6000), inject: true, tier: 1, reason: "pressure band"},
		{name: "pressure needs benefit", tokens: 80000, baseline: 79000, rec: recWith(3000), reason: "pressure band, but only 3000"},
		{name: "nothing to compress", tokens: 50000, rec: nothing, reason: "nothing compressible"},
		{name: "tier 2 by count", tokens: 50000, baseline: 49000, rec: recWith(100), blocks: tierBlocks(1, 5, 1), inject: true, tier: 2, reason: "tier 2"},
		{name: "tier 2 below the floor", tokens: 30000, rec: recWith(100), blocks: tierBlocks(1, 5, 1), reason: "below the first-sight floor"},
		{name: "tier 3 by count", tokens: 50000, baseline: 49000, rec: nothing, blocks: append(tierBlocks(2, 5, 1), tierBlocks(1, 5, 6)...), inject: true, tier: 3, reason: "tier 3"},
		{name: "tier 3 off at MaxTier 2", tokens: 50000, rec: nothing, blocks: tierBlocks(2, 5, 1),
			mutate: func(_ *CompressionState, c *Config) { c.Tiers.MaxTier = 2 }, reason: "nothing compressible"},
		{name: "tiers disabled", tokens: 50000, baseline: 49000, rec: nothing, blocks: tierBlocks(1, 6, 1),
			mutate: func(_ *CompressionState, c *Config) { c.Tiers.Enabled = false }, reason: "nothing compressible"},
		{name: "tier 2 paced", tokens: 50000, baseline: 49000, rec: recWith(100), blocks: tierBlocks(1, 5, 1),
			mutate: func(s *CompressionState, _ *Config) { s.Nudge.LastShownByTier[2] = 45000 }, reason: "waiting for growth"},
		{name: "emergency puts raw first", tokens: 92000, baseline: 91000, rec: recWith(6000), blocks: tierBlocks(1, 5, 1), inject: true, tier: 1, reason: "pressure band"},
		{name: "suppressed", tokens: 55000, rec: recWith(20000),
			mutate: func(s *CompressionState, _ *Config) {
				s.Stats.ConsecutiveFailures, s.Stats.SuppressedAtTokens = 3, 50000
			}, reason: "suppressed after 3"},
		{name: "suppression lifts after growth", tokens: 63000, rec: recWith(20000),
			mutate: func(s *CompressionState, _ *Config) {
				s.Stats.ConsecutiveFailures, s.Stats.SuppressedAtTokens = 3, 50000
			}, inject: true, tier: 1},
		{name: "no limit", tokens: 50000, rec: recWith(20000), mutate: func(_ *CompressionState, c *Config) { c.ModelContextLimit = 0 }, reason: "no context limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := CreateInitialState("s", "/a")
			st.Nudge.LastPerMessageNudgeTokens = tc.baseline
			st.Blocks = tc.blocks
			c := cfg
			if tc.mutate != nil {
				tc.mutate(&st, &c)
			}
			d := DecideNudge(DecideNudgeInput{State: st, Config: c, TokenCount: tc.tokens, Recommendation: tc.rec})
			if d.ShouldInject != tc.inject || d.Tier != tc.tier || !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("got inject=%v tier=%d reason=%q; want inject=%v tier=%d reason containing %q",
					d.ShouldInject, d.Tier, d.Reason, tc.inject, tc.tier, tc.reason)
			}
			if tc.tier >= 2 && len(d.TierTargetBlocks) != 5 {
				t.Errorf("got %d target blocks, want 5", len(d.TierTargetBlocks))
			}
		})
	}
}

func TestRenderNudgeText(t *testing.T) {
	d := NudgeDecision{ShouldInject: true, Tier: 1, ContextUsage: 0.5,
		CompressibleRanges: []RangeInfo{{StartRef: "m00001", EndRef: "m00040", Count: 40, Tokens: 9000, Chars: 36000, ToolPct: 80, TextPct: 20}},
		ContextBreakdown:   map[string]int{"tool": 30000, "text": 20000}}
	voice, text := RenderNudgeText(d, NudgeSections{})
	if voice != VoiceGentle || !strings.Contains(text, defaultEfficiencyNote) || !strings.Contains(text, "m00001–m00040") ||
		!strings.Contains(text, "HOW TO COMPRESS rules") || strings.Contains(text, HowToCompressRules) || strings.Contains(text, "URGENT") {
		t.Errorf("gentle nudge:\n%s", text)
	}
	d.Breakdown.Emergency, d.ContextUsage, d.TruncatedCount = true, 0.93, 2
	voice, text = RenderNudgeText(d, NudgeSections{})
	if voice != VoiceEmergency || !strings.Contains(text, "URGENT") || !strings.Contains(text, "2 message(s)") {
		t.Errorf("emergency nudge:\n%s", text)
	}
	custom, empty := "Custom header.", ""
	_, text = RenderNudgeText(d, NudgeSections{EmergencyHeader: &custom})
	if !strings.Contains(text, custom) || strings.Contains(text, "URGENT") {
		t.Errorf("override not applied:\n%s", text)
	}
	d.Breakdown.Emergency = false
	_, text = RenderNudgeText(d, NudgeSections{EfficiencyNote: &empty})
	if strings.Contains(text, defaultEfficiencyNote) {
		t.Errorf("empty override did not remove the section")
	}
	d.Tier, d.TierTargetBlocks = 2, tierBlocks(1, 3, 1)
	_, text = RenderNudgeText(d, NudgeSections{})
	if !strings.Contains(text, "TIER 2 rules") || strings.Contains(text, Tier2Rules) || !strings.Contains(text, "start=b1 end=b3") {
		t.Errorf("tier-2 nudge:\n%s", text)
	}
	d.Tier = 3
	_, text = RenderNudgeText(d, NudgeSections{T3Guidance: &custom})
	if !strings.Contains(text, "TIER 3 rules") || strings.Contains(text, Tier3Rules) || !strings.Contains(text, custom) {
		t.Errorf("tier-3 nudge:\n%s", text)
	}
}

// The rule texts must cover the rules the spec lists for each of them.
func TestPromptCoverage(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		must []string
	}{
		"HowToCompressRules": {HowToCompressRules, []string{
			"COPY EXACTLY", "LEAVE OUT", "WHEN SPACE IS TIGHT", "line numbers", "Signatures", "Error messages",
			"reasons", "Constraints", "Exact values", "message ref", "paraphrase", "goal", "Open questions", "TASK AS OF THIS BLOCK",
			"\\uXXXX", "Long logs", "Dead ends", "what it CONTAINS", "bullets", "ARCHIVE", "THAT it happened and WHERE"}},
		"Tier2Rules": {Tier2Rules, []string{"KEEP", "DROP", "FORMAT", "Source: bN+bM", "3 to 5 bullets", "50 to 150 tokens",
			"[no actionable content]", "SUPERSEDED", "OBSOLETE", "TASK AS OF THIS BLOCK", "merge them"}},
		"Tier3Rules": {Tier3Rules, []string{"Released outcomes", "Open work", "decisions", "constraints", "Source: bN+bM",
			"1 to 3 facts", "at most 8 words", "30 to 60 tokens", "N x 40", "[N blocks obsolete]", "30 days"}},
		"CompressToolDescription": {CompressToolDescription, []string{"archived", "Only call this when", "cannot be undone"}},
		"CompressPhilosophy":      {CompressPhilosophy, []string{"YOU", "archived", "never the step you are in the middle of"}},
	} {
		for _, m := range tc.must {
			if !strings.Contains(tc.text, m) {
				t.Errorf("%s does not cover %q", name, m)
			}
		}
	}
}
