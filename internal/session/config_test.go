package session

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
)

func TestEngineConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		got, warnings := EngineConfig(config.NoaConfig{})
		want := noa.DefaultConfig(config.DefaultNoaContextLimit)
		want.Truncate.Threshold = 0
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b func(string) bool) bool { return a == nil && b == nil })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if len(warnings) != 0 {
			t.Errorf("got warnings %q for the defaults, want none", warnings)
		}
	})
	t.Run("every knob", func(t *testing.T) {
		got, _ := EngineConfig(config.NoaConfig{
			ContextLimit: 100000, NudgeStartPct: 40, PressurePct: 70, EmergencyPct: 85, MinCompressChars: 4000,
			MinSummaryChars: 60, MaxSummaryChars: 9000, PreserveRecentMessages: 6, PreserveRecentTokens: 4000,
			MaxCompressAttempts: 2, MaxTier: 2, Tier2Trigger: 4, Tier3Trigger: 3, ProtectedTools: []string{"git:*"},
		})
		want := noa.DefaultConfig(100000)
		want.Truncate.Threshold = 0
		want.Nudge.MinContextLimitPct, want.Nudge.MaxContextLimitPct, want.Nudge.EmergencyThresholdPct = 0.40, 0.70, 0.85
		want.Compress = noa.CompressConfig{MinCompressRange: 4000, MinSummaryLength: 60, MaxSummaryLength: 9000}
		want.PreserveRecentMessages, want.PreserveRecentTokens, want.MaxCompressAttempts = 6, 4000, 2
		want.Tiers = noa.TierConfig{Enabled: true, MaxTier: 2, Tier2Trigger: 4, Tier3Trigger: 3}
		want.ProtectedTools = []string{"git:*"}
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b func(string) bool) bool { return a == nil && b == nil })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("tier 1 turns consolidation off", func(t *testing.T) {
		if got, _ := EngineConfig(config.NoaConfig{MaxTier: 1}); got.Tiers.Enabled {
			t.Errorf("got tiers enabled, want off")
		}
	})
	t.Run("noa warns about a start above the default pressure point", func(t *testing.T) {
		_, warnings := EngineConfig(config.NoaConfig{NudgeStartPct: 80})
		if len(warnings) != 1 || !strings.Contains(warnings[0], "MinContextLimitPct (0.8) exceeds Nudge.MaxContextLimitPct (0.75)") {
			t.Errorf("got warnings %q, want noa's order warning", warnings)
		}
	})
}

func TestOptionsFrom(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"data_dir": "/var/mcproxy", "noa": {"max_result_tokens": 9000}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := OptionsFrom(cfg, noa.DefaultCountTokens)
	if opts.Dir != "/var/mcproxy/sessions" || opts.MaxResultTokens != 9000 || opts.Noa.ModelContextLimit != config.DefaultNoaContextLimit || opts.Count == nil {
		t.Errorf("got dir %q, max %d, limit %d; want /var/mcproxy/sessions, 9000, %d", opts.Dir, opts.MaxResultTokens, opts.Noa.ModelContextLimit, config.DefaultNoaContextLimit)
	}
}

// noa.fsync reaches the host: "every_second" and the default flush within
// a second, "always" before the answer.
func TestOptionsFromFsync(t *testing.T) {
	for fsync, want := range map[string]time.Duration{"": time.Second, `"fsync": "always",`: 0, `"fsync": "every_second",`: time.Second} {
		cfg, err := config.Parse([]byte(`{"noa": {`+fsync+` "enabled": true}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if opts, _ := OptionsFrom(cfg, noa.DefaultCountTokens); opts.FlushEvery != want {
			t.Errorf("%s: FlushEvery %v, want %v", fsync, opts.FlushEvery, want)
		}
	}
}
