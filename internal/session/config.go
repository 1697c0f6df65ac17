package session

import (
	"path/filepath"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// EngineConfig maps the config file's noa section onto noa.Config: noa's
// tuned defaults for the context limit, with every knob the user set
// applied. The warnings are noa.ValidateConfig's, for the caller to log at
// start-up; they never stop a session.
func EngineConfig(c config.NoaConfig) (noa.Config, []string) {
	limit := c.ContextLimit
	if limit <= 0 {
		limit = config.DefaultNoaContextLimit
	}
	cfg := noa.DefaultConfig(limit)
	pct := func(dst *float64, v int) {
		if v > 0 {
			*dst = float64(v) / 100
		}
	}
	pct(&cfg.Nudge.MinContextLimitPct, c.NudgeStartPct)
	pct(&cfg.Nudge.MaxContextLimitPct, c.PressurePct)
	pct(&cfg.Nudge.EmergencyThresholdPct, c.EmergencyPct)
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	set(&cfg.Compress.MinCompressRange, c.MinCompressChars)
	set(&cfg.Compress.MinSummaryLength, c.MinSummaryChars)
	set(&cfg.Compress.MaxSummaryLength, c.MaxSummaryChars)
	set(&cfg.PreserveRecentMessages, c.PreserveRecentMessages)
	set(&cfg.PreserveRecentTokens, c.PreserveRecentTokens)
	set(&cfg.MaxCompressAttempts, c.MaxCompressAttempts)
	set(&cfg.Tiers.Tier2Trigger, c.Tier2Trigger)
	set(&cfg.Tiers.Tier3Trigger, c.Tier3Trigger)
	switch c.MaxTier {
	case 1:
		cfg.Tiers.Enabled = false
	case 2, 3:
		cfg.Tiers.MaxTier = noa.Tier(c.MaxTier)
	}
	cfg.ProtectedTools = append([]string(nil), c.ProtectedTools...)
	// The host never truncates over MCP (see Options.Noa); validate what it
	// will actually run.
	cfg.Truncate.Threshold = 0
	return cfg, noa.ValidateConfig(cfg)
}

// SessionsDir is where sessions live under a data directory.
func SessionsDir(dataDir string) string { return filepath.Join(dataDir, "sessions") }

// OptionsFrom builds host options from a loaded (defaulted) config; count is
// the configured tokenizer's Count (cfg.Tokenizer names it). It returns noa's config warnings.
func OptionsFrom(cfg *config.Config, count noa.TokenCountFn) (Options, []string) {
	ncfg, warnings := EngineConfig(cfg.Noa)
	return Options{
		Dir:             SessionsDir(cfg.DataDir),
		Noa:             ncfg,
		MaxResultTokens: cfg.Noa.MaxResultTokens,
		Count:           count,
		Tokenizer:       cfg.Tokenizer,
		Retention:       cfg.Noa.RetentionPeriod(),
		FlushEvery:      cfg.Noa.FlushEvery(),
		// What a front does with a call it cannot record (issue 26).
		RefuseUnrecorded: cfg.Noa.RefuseUnrecorded(),
	}, warnings
}
