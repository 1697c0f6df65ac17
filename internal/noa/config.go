package noa

import (
	"fmt"
	"math"
)

// TierConfig governs merging blocks into higher tiers.
type TierConfig struct {
	Enabled bool
	// MaxTier is the highest tier blocks may reach: 2 or 3, default 3.
	// Lowering it is for tests; raising it has no prompts to back it.
	MaxTier Tier
	// Tier2Trigger: once this many tier-1 blocks are live, the nudge asks
	// for a tier-2 merge.
	Tier2Trigger int
	// Tier3Trigger: the same count, for tier-2 blocks and a tier-3 merge.
	Tier3Trigger int
}

// NudgeConfig sets the rhythm of compression requests to the model. Each
// *Pct field is a share of Config.ModelContextLimit (0.75 means 75%).
type NudgeConfig struct {
	// MaxContextLimitPct: usage at or above this counts as under pressure.
	MaxContextLimitPct float64
	// MinContextLimitPct: below this usage there is no first nudge, and tier
	// merges are not requested however many blocks exist.
	MinContextLimitPct float64
	// EmergencyThresholdPct: from this usage on, nudges use the urgent tone.
	EmergencyThresholdPct float64
	// GrowthRatio, GrowthFloor and GrowthCap give the adaptive growth as
	// clamp(limit*GrowthRatio, GrowthFloor, GrowthCap).
	GrowthRatio float64
	GrowthFloor int
	GrowthCap   int
	// MinGrowthFloor and MinGrowthRatio feed NudgeGrowthFloor, the spacing
	// between nudges.
	MinGrowthFloor int
	MinGrowthRatio float64
	// Tier2GrowthMultiplier times the adaptive growth gives how many tokens
	// must be waiting before a tier-2 or tier-3 merge is requested.
	Tier2GrowthMultiplier float64
	// MinPressureBenefitTokens: under pressure, skip the nudge unless at
	// least this much could be freed. nil: max(5000, round(limit*0.01)).
	MinPressureBenefitTokens *int
}

// TruncateConfig configures the fallback that needs no model cooperation.
type TruncateConfig struct {
	// Threshold: at this share of the window (or sooner, when the view
	// and its overhead would not fit the window) the biggest messages get
	// shortened without asking the model. 0 turns it off.
	Threshold float64
	// RecallTool is the host tool a cut names for reading back what was
	// cut; "" means DefaultRecallTool.
	RecallTool string
	// ReserveTokens is what the request spends beside the view that the
	// window must hold too (the host's additions to the system prompt,
	// the nudge); 0 means the default resident prompt plus NudgeMaxTokens.
	ReserveTokens int
}

// CompressConfig limits what a Compress call may ask for.
type CompressConfig struct {
	// MinCompressRange: the message-ref ranges of one call must together
	// cover at least this many characters, or the whole call is refused;
	// block-id ranges do not count toward it and are not checked.
	MinCompressRange int
	// MinSummaryLength and MaxSummaryLength bound each summary in characters
	// (runes). Zero disables the respective bound.
	MinSummaryLength int
	MaxSummaryLength int
}

// Config holds every setting of the package; start from DefaultConfig.
type Config struct {
	ModelContextLimit int
	Tiers             TierConfig
	Nudge             NudgeConfig
	Truncate          TruncateConfig
	Compress          CompressConfig
	// ProtectedTools: calls to these tools (patterns, see MatchToolPattern)
	// are never folded into a block.
	ProtectedTools []string
	// IsToolProtected lets the host protect more tools by its own rule;
	// nil adds none.
	IsToolProtected func(toolName string) bool `json:"-"`
	// PreserveRecentMessages and PreserveRecentTokens size the newest stretch
	// of the conversation, left alone because the current step likely still
	// needs it.
	PreserveRecentMessages int
	PreserveRecentTokens   int
	// MaxCompressAttempts: after this many failed or ignored nudges in a row,
	// nudging pauses until usage grows by NudgeGrowthFloor, so a model
	// that cannot comply is not pestered every turn.
	MaxCompressAttempts int
}

// Historical absolute defaults, sized for a 200K window.
const (
	defaultGrowthCap       = 50000
	defaultGrowthFloor     = 10000
	defaultMinGrowthFloor  = 20000
	defaultMinCompressChar = 5000
	defaultPreserveTokens  = 5000
)

// DefaultConfig gives our tuned settings for a context window of limit tokens.
//
// Pacing scales with the window (spec, DefaultConfig): absolute floors are
// capped at a tenth of the window so a small window is not paced in steps
// that exceed its headroom, GrowthFloor stays below GrowthCap so GrowthRatio
// matters, and GrowthRatio = 50000/128000 so every window of 128K or more
// resolves to the historical 50K growth unit.
func DefaultConfig(limit int) Config {
	tenth := limit / 10
	if tenth < 1 {
		tenth = 1
	}
	growthFloor := min(defaultGrowthFloor, tenth)
	return Config{
		ModelContextLimit: limit,
		Tiers:             TierConfig{Enabled: true, MaxTier: 3, Tier2Trigger: 5, Tier3Trigger: 5},
		Nudge: NudgeConfig{
			MaxContextLimitPct:    0.75,
			MinContextLimitPct:    0.45,
			EmergencyThresholdPct: 0.90,
			GrowthRatio:           float64(defaultGrowthCap) / 128000,
			GrowthFloor:           growthFloor,
			GrowthCap:             defaultGrowthCap,
			MinGrowthFloor:        min(defaultMinGrowthFloor, tenth),
			MinGrowthRatio:        0.45,
			Tier2GrowthMultiplier: 1.5,
		},
		Truncate: TruncateConfig{Threshold: 0.95},
		Compress: CompressConfig{
			MinCompressRange: min(defaultMinCompressChar, max(limit/8, 1)),
			MinSummaryLength: 50,
			MaxSummaryLength: 20000,
		},
		PreserveRecentMessages: 5,
		PreserveRecentTokens:   min(defaultPreserveTokens, tenth),
		MaxCompressAttempts:    3,
	}
}

// ValidateConfig only warns: an odd setting makes compression worse, which
// is no reason to end a session. The host logs the texts and carries on.
func ValidateConfig(c Config) []string {
	var w []string
	add := func(format string, a ...any) { w = append(w, fmt.Sprintf(format, a...)) }
	if c.ModelContextLimit <= 0 {
		add("ModelContextLimit is %d; it must be positive (usage cannot be computed)", c.ModelContextLimit)
	}
	n := c.Nudge
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"Nudge.MinContextLimitPct", n.MinContextLimitPct},
		{"Nudge.MaxContextLimitPct", n.MaxContextLimitPct},
		{"Nudge.EmergencyThresholdPct", n.EmergencyThresholdPct},
	} {
		if math.IsNaN(p.v) || p.v <= 0 || p.v > 1 {
			add("%s is %v; it should be a fraction in (0, 1]", p.name, p.v)
		}
	}
	if n.MinContextLimitPct > n.MaxContextLimitPct {
		add("Nudge.MinContextLimitPct (%v) exceeds Nudge.MaxContextLimitPct (%v)", n.MinContextLimitPct, n.MaxContextLimitPct)
	}
	if n.MaxContextLimitPct > n.EmergencyThresholdPct {
		add("Nudge.MaxContextLimitPct (%v) exceeds Nudge.EmergencyThresholdPct (%v)", n.MaxContextLimitPct, n.EmergencyThresholdPct)
	}
	if n.GrowthRatio <= 0 {
		add("Nudge.GrowthRatio is %v; it should be positive", n.GrowthRatio)
	}
	if n.GrowthFloor > n.GrowthCap {
		add("Nudge.GrowthFloor (%d) exceeds Nudge.GrowthCap (%d); GrowthRatio has no effect", n.GrowthFloor, n.GrowthCap)
	}
	if n.MinGrowthFloor < 0 || n.MinGrowthRatio < 0 {
		add("Nudge.MinGrowthFloor and Nudge.MinGrowthRatio must not be negative")
	}
	if n.Tier2GrowthMultiplier <= 0 {
		add("Nudge.Tier2GrowthMultiplier is %v; it should be positive", n.Tier2GrowthMultiplier)
	}
	if n.MinPressureBenefitTokens != nil && *n.MinPressureBenefitTokens < 0 {
		add("Nudge.MinPressureBenefitTokens is %d; it must not be negative", *n.MinPressureBenefitTokens)
	}
	if c.Truncate.Threshold < 0 || c.Truncate.Threshold > 1 {
		add("Truncate.Threshold is %v; it should be in (0, 1] (0 disables truncation)", c.Truncate.Threshold)
	} else if c.Truncate.Threshold > 0 && c.Truncate.Threshold < n.MaxContextLimitPct {
		add("Truncate.Threshold (%v) is below Nudge.MaxContextLimitPct (%v); tool output will be cut before the model is asked to compress", c.Truncate.Threshold, n.MaxContextLimitPct)
	}
	if c.Truncate.ReserveTokens < 0 {
		add("Truncate.ReserveTokens is %d; it must not be negative (0 means the default reserve)", c.Truncate.ReserveTokens)
	}
	if c.Tiers.Enabled {
		if c.Tiers.MaxTier != 2 && c.Tiers.MaxTier != 3 {
			add("Tiers.MaxTier is %d; only 2 and 3 are supported", c.Tiers.MaxTier)
		}
		if c.Tiers.Tier2Trigger < 1 || c.Tiers.Tier3Trigger < 1 {
			add("Tiers.Tier2Trigger and Tiers.Tier3Trigger must be at least 1")
		}
	}
	if c.Compress.MinCompressRange < 0 {
		add("Compress.MinCompressRange is %d; it must not be negative", c.Compress.MinCompressRange)
	}
	if c.Compress.MaxSummaryLength > 0 && c.Compress.MinSummaryLength > c.Compress.MaxSummaryLength {
		add("Compress.MinSummaryLength (%d) exceeds Compress.MaxSummaryLength (%d); every summary will be rejected", c.Compress.MinSummaryLength, c.Compress.MaxSummaryLength)
	}
	if c.PreserveRecentMessages < 0 || c.PreserveRecentTokens < 0 {
		add("PreserveRecentMessages and PreserveRecentTokens must not be negative")
	}
	if c.MaxCompressAttempts < 1 {
		add("MaxCompressAttempts is %d; nudges will be suppressed immediately", c.MaxCompressAttempts)
	}
	return w
}

// adaptiveGrowth is clamp(limit*GrowthRatio, GrowthFloor, GrowthCap).
func adaptiveGrowth(cfg Config) int {
	g := int(math.Round(float64(cfg.ModelContextLimit) * cfg.Nudge.GrowthRatio))
	if cfg.Nudge.GrowthCap > 0 && g > cfg.Nudge.GrowthCap {
		g = cfg.Nudge.GrowthCap
	}
	if g < cfg.Nudge.GrowthFloor {
		g = cfg.Nudge.GrowthFloor
	}
	return g
}

// NudgeGrowthFloor is the usage increase that must happen between two nudges
// outside the pressure band, and the increase that ends a suppression. It is
// max(MinGrowthFloor, adaptive growth * MinGrowthRatio), limited to limit/8
// so that a small window still reaches the next step before it fills up.
func NudgeGrowthFloor(cfg Config) int {
	g := int(math.Round(float64(adaptiveGrowth(cfg)) * cfg.Nudge.MinGrowthRatio))
	if g < cfg.Nudge.MinGrowthFloor {
		g = cfg.Nudge.MinGrowthFloor
	}
	if eighth := cfg.ModelContextLimit / 8; eighth > 0 && g > eighth {
		g = eighth
	}
	if g < 1 {
		g = 1
	}
	return g
}

// minPressureBenefit resolves Nudge.MinPressureBenefitTokens.
func minPressureBenefit(cfg Config) int {
	if p := cfg.Nudge.MinPressureBenefitTokens; p != nil {
		return *p
	}
	return max(5000, int(math.Round(float64(cfg.ModelContextLimit)*0.01)))
}

func maxTier(cfg Config) Tier {
	if !cfg.Tiers.Enabled {
		return 1
	}
	if cfg.Tiers.MaxTier < 2 {
		return 2
	}
	if cfg.Tiers.MaxTier > 3 {
		return 3
	}
	return cfg.Tiers.MaxTier
}
