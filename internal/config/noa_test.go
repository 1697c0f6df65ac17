package config

import (
	"strings"
	"testing"
	"time"
)

func TestNoaConfigParse(t *testing.T) {
	cfg, err := Parse([]byte(`{"noa": {"enabled": false, "context_limit": 120000, "max_result_tokens": 8000,
		"nudge_start_pct": 40, "pressure_pct": 70, "emergency_pct": 88, "max_tier": 2, "protected_tools": ["git:*"]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Noa
	if n.IsEnabled() {
		t.Errorf("got enabled, want disabled")
	}
	if n.ContextLimit != 120000 || n.MaxResultTokens != 8000 || n.NudgeStartPct != 40 || n.PressurePct != 70 || n.EmergencyPct != 88 || n.MaxTier != 2 {
		t.Errorf("got %+v, want the values in the file", n)
	}
	for _, tc := range []struct{ in, want int }{{0, DefaultMaxResultTokens}, {20000, 10000}, {8000, 4000}, {64000, DefaultMaxResultTokens}} {
		n := NoaConfig{ContextLimit: tc.in}
		n.applyDefaults()
		if n.MaxResultTokens != tc.want {
			t.Errorf("context_limit %d: got default max_result_tokens %d, want %d", tc.in, n.MaxResultTokens, tc.want)
		}
	}
	if got := (NoaConfig{}).IsEnabled(); !got {
		t.Errorf("zero NoaConfig: got enabled=false, want true")
	}
}

func TestNoaConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings, each must appear; nil = valid
	}{
		{"defaults", `{}`, nil},
		{"all knobs in range", `{"context_limit": 64000, "max_result_tokens": 4000, "nudge_start_pct": 30, "pressure_pct": 60, "emergency_pct": 80,
			"min_compress_chars": 100, "min_summary_chars": 10, "max_summary_chars": 100, "preserve_recent_messages": 0,
			"preserve_recent_tokens": 10, "max_compress_attempts": 1, "max_tier": 1, "tier2_trigger": 2, "tier3_trigger": 2}`, nil},
		{"context limit too small", `{"context_limit": 100}`, []string{"noa.context_limit: 100 is out of range"}},
		{"small window, default result limit", `{"context_limit": 20000}`, nil},
		{"result larger than the window", `{"context_limit": 10000, "max_result_tokens": 20000}`, []string{"noa.max_result_tokens: 20000 is out of range"}},
		{"result limit against default window", `{"max_result_tokens": 300000}`, []string{"noa.max_result_tokens", "context_limit (200000)"}},
		{"percent over 100", `{"emergency_pct": 150}`, []string{"noa.emergency_pct: 150 is not a percentage"}},
		{"percents out of order", `{"nudge_start_pct": 80, "pressure_pct": 60}`, []string{"noa.nudge_start_pct: 80 exceeds pressure_pct (60)"}},
		{"negative knob", `{"min_summary_chars": -1}`, []string{"noa.min_summary_chars: must not be negative"}},
		{"summary bounds crossed", `{"min_summary_chars": 500, "max_summary_chars": 100}`, []string{"noa.min_summary_chars: 500 exceeds max_summary_chars (100)"}},
		{"tier out of range", `{"max_tier": 4}`, []string{"noa.max_tier: 4 is not a tier"}},
		{"bad pattern", `{"protected_tools": ["", "a*b*"]}`, []string{"noa.protected_tools[0]: is blank", `noa.protected_tools[1]: "a*b*"`}},
		{"wrong type", `{"context_limit": "big"}`, []string{"noa.context_limit: want a whole number"}},
		{"retention in days", `{"retention": "7d"}`, nil},
		{"retention off", `{"retention": "off"}`, nil},
		{"retention as a duration", `{"retention": "36h"}`, nil},
		{"retention malformed", `{"retention": "a month"}`, []string{`noa.retention: invalid retention "a month"`, `"30d"`, `"off"`}},
		{"retention negative", `{"retention": "-2d"}`, []string{`noa.retention: invalid retention "-2d"`}},
		{"fsync always", `{"fsync": "always"}`, nil},
		{"fsync every second", `{"fsync": "every_second"}`, nil},
		{"fsync unknown", `{"fsync": "sometimes"}`, []string{`noa.fsync: "sometimes"`, `"always"`, `"every_second"`}},
		{"on_record_error report", `{"on_record_error": "report"}`, nil},
		{"on_record_error refuse", `{"on_record_error": "refuse"}`, nil},
		{"on_record_error unknown", `{"on_record_error": "ignore"}`, []string{`noa.on_record_error: "ignore"`, `"report"`, `"refuse"`}},
		{"mcp recall", `{"mcp": "recall"}`, nil},
		{"mcp full", `{"mcp": "full"}`, nil},
		{"mcp unknown", `{"mcp": "off"}`, []string{`noa.mcp: "off": want "full"`, `"recall"`}},
		{"unknown key", `{"context_limt": 1}`, []string{"noa.context_limt: unknown key", `did you mean "context_limit"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSection(t, "noa", tc.in, tc.want)
		})
	}
}

// checkSection parses {"<section>": in} and checks the outcome: no error
// when want is nil, otherwise an error containing every string of want.
func checkSection(t *testing.T, section, in string, want []string) {
	t.Helper()
	_, err := Parse([]byte(`{"`+section+`": `+in+`}`), nil)
	if want == nil {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got error %q, want it to contain %q", err, w)
		}
	}
}

func TestRetentionPeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 30 * 24 * time.Hour, "0": 0, "off": 0, "OFF": 0, "7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour} {
		if got := (NoaConfig{Retention: in}).RetentionPeriod(); got != want {
			t.Errorf("retention %q: got %v, want %v", in, got, want)
		}
	}
}
