package noa

import (
	"strings"
	"testing"
)

func TestDefaultConfigScaling(t *testing.T) {
	for _, tc := range []struct {
		limit         int
		wantAdaptive  int
		wantCadence   int
		wantPreserveT int
	}{
		{200000, 50000, 22500, 5000},
		{128000, 50000, 16000, 5000},
		{1000000, 50000, 22500, 5000},
		{64000, 25000, 8000, 5000},
		{40000, 15625, 5000, 4000},
		{16000, 6250, 2000, 1600},
	} {
		cfg := DefaultConfig(tc.limit)
		if got := adaptiveGrowth(cfg); got != tc.wantAdaptive {
			t.Errorf("limit %d: adaptive growth = %d, want %d", tc.limit, got, tc.wantAdaptive)
		}
		if got := NudgeGrowthFloor(cfg); got != tc.wantCadence {
			t.Errorf("limit %d: NudgeGrowthFloor = %d, want %d", tc.limit, got, tc.wantCadence)
		}
		if got := cfg.PreserveRecentTokens; got != tc.wantPreserveT {
			t.Errorf("limit %d: PreserveRecentTokens = %d, want %d", tc.limit, got, tc.wantPreserveT)
		}
		if cfg.Nudge.GrowthFloor >= cfg.Nudge.GrowthCap {
			t.Errorf("limit %d: GrowthFloor %d not below GrowthCap %d", tc.limit, cfg.Nudge.GrowthFloor, cfg.Nudge.GrowthCap)
		}
		if NudgeGrowthFloor(cfg) > tc.limit/8 {
			t.Errorf("limit %d: cadence %d exceeds an eighth of the window", tc.limit, NudgeGrowthFloor(cfg))
		}
		if w := ValidateConfig(cfg); len(w) != 0 {
			t.Errorf("limit %d: defaults produce warnings: %v", tc.limit, w)
		}
	}
}

func TestValidateConfig(t *testing.T) {
	neg := -1
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"zero limit", func(c *Config) { c.ModelContextLimit = 0 }, "ModelContextLimit"},
		{"min above max", func(c *Config) { c.Nudge.MinContextLimitPct = 0.8 }, "MinContextLimitPct (0.8) exceeds"},
		{"max above emergency", func(c *Config) { c.Nudge.MaxContextLimitPct = 0.95 }, "exceeds Nudge.EmergencyThresholdPct"},
		{"pct out of range", func(c *Config) { c.Nudge.EmergencyThresholdPct = 1.5 }, "fraction in (0, 1]"},
		{"floor above cap", func(c *Config) { c.Nudge.GrowthFloor = 60000 }, "GrowthRatio has no effect"},
		{"negative benefit", func(c *Config) { c.Nudge.MinPressureBenefitTokens = &neg }, "MinPressureBenefitTokens"},
		{"truncate out of range", func(c *Config) { c.Truncate.Threshold = 2 }, "Truncate.Threshold"},
		{"truncate below pressure", func(c *Config) { c.Truncate.Threshold = 0.5 }, "cut before the model"},
		{"max tier", func(c *Config) { c.Tiers.MaxTier = 4 }, "MaxTier"},
		{"triggers", func(c *Config) { c.Tiers.Tier2Trigger = 0 }, "Tier2Trigger"},
		{"summary bounds", func(c *Config) { c.Compress.MinSummaryLength = 30000 }, "every summary will be rejected"},
		{"attempts", func(c *Config) { c.MaxCompressAttempts = 0 }, "MaxCompressAttempts"},
		{"negative preserve", func(c *Config) { c.PreserveRecentMessages = -1 }, "PreserveRecent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(200000)
			tc.mutate(&cfg)
			w := ValidateConfig(cfg)
			if !strings.Contains(strings.Join(w, "\n"), tc.want) {
				t.Errorf("got warnings %q, want one containing %q", w, tc.want)
			}
		})
	}
}

func TestMinPressureBenefit(t *testing.T) {
	if got := minPressureBenefit(DefaultConfig(200000)); got != 5000 {
		t.Errorf("200K: got %d, want 5000", got)
	}
	if got := minPressureBenefit(DefaultConfig(1000000)); got != 10000 {
		t.Errorf("1M: got %d, want 10000", got)
	}
	cfg := DefaultConfig(200000)
	v := 123
	cfg.Nudge.MinPressureBenefitTokens = &v
	if got := minPressureBenefit(cfg); got != 123 {
		t.Errorf("override: got %d, want 123", got)
	}
}

func TestDefaultCountTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"你好世界", 4},
		{"你好abcd", 3},
		{"こんにちは", 5},
		{"한국어", 3},
		{"😀😀😀😀", 1}, // runes, not UTF-16 units
		{"ééééé", 2},
	} {
		if got := DefaultCountTokens(tc.in); got != tc.want {
			t.Errorf("DefaultCountTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	if got := EstimateTokensFast("你好世界"); got != 1 {
		t.Errorf("EstimateTokensFast skips the CJK scan: got %d, want 1", got)
	}
	if got := EstimateTokensFast("abcdefgh"); got != 2 {
		t.Errorf("EstimateTokensFast = %d, want 2", got)
	}
	if got := CountMessageTokens(CoreMessage{Text: "abcd", ToolName: "read"}, nil); got != 2 {
		t.Errorf("CountMessageTokens = %d, want 2", got)
	}
	if got := CountMessageTokens(CoreMessage{Text: "abcd"}, func(string) int { return 7 }); got != 7 {
		t.Errorf("CountMessageTokens with counter = %d, want 7", got)
	}
}

func TestFormatTokens(t *testing.T) {
	for _, tc := range []struct {
		in   int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1.0K"}, {1234, "1.2K"}, {9949, "9.9K"}, {9960, "10K"}, {10000, "10K"}, {42499, "42K"}, {42500, "43K"}, {-1500, "-1.5K"}} {
		if got := FormatTokens(tc.in); got != tc.want {
			t.Errorf("FormatTokens(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMatchToolPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"Compress", "compress", true}, {"read", "Read", true}, {"git:*", "git:status", true},
		{"git:*", "github:x", false}, {"*", "anything", true}, {"a*b*", "axb", false},
		{"read", "read_file", false}, {"", "x", false}, {"x", "", false},
	} {
		if got := MatchToolPattern(tc.pattern, tc.name); got != tc.want {
			t.Errorf("MatchToolPattern(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

func TestIsMessageProtected(t *testing.T) {
	cfg := testConfig()
	cfg.ProtectedTools = []string{"memory:*"}
	cfg.IsToolProtected = func(n string) bool { return n == "host_secret" }
	for _, tc := range []struct {
		m    CoreMessage
		want bool
	}{
		{call("1", "k", CompressToolName), true},
		{result("2", "k", "compress", "x"), true},
		{call("3", "k", "memory:store"), true},
		{call("4", "k", "host_secret"), true},
		{call("5", "k", "search"), false},
		{txt("6", RoleUser, "Compress"), false},
		{CoreMessage{ID: "7", ContentType: CTText, ToolName: "memory:x"}, false},
	} {
		if got := IsMessageProtected(tc.m, cfg); got != tc.want {
			t.Errorf("IsMessageProtected(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
	// A result without a tool name inherits protection from its call.
	msgs := []CoreMessage{call("c", "k9", "memory:store"), {ID: "r", Role: RoleTool, ContentType: CTToolResult, ToolCallID: "k9"}}
	if !hardProtectedIDs(msgs, cfg)["r"] {
		t.Errorf("result of a protected call is not protected")
	}
	if !IsNeverPreserveRecentTool(call("x", "k", "Read")) || IsNeverPreserveRecentTool(call("y", "k", "search")) || IsNeverPreserveRecentTool(txt("z", RoleUser, "Read")) {
		t.Errorf("IsNeverPreserveRecentTool misclassifies")
	}
}
