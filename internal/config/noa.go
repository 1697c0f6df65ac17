package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NoaConfig is the "noa" object: model-driven context compression on every
// client session. Zero values mean "default"; the tuning knobs default to
// noa's own values, which scale with context_limit and are resolved by the
// session package (this package does not depend on the engine).
type NoaConfig struct {
	// Enabled switches noa on for every session. nil means true.
	Enabled *bool `json:"enabled,omitempty"`
	// ContextLimit is the token budget noa paces against. Over MCP it sees
	// only tool traffic, so this is the share of the model's window that
	// tool calls and results may fill. Zero means DefaultNoaContextLimit.
	ContextLimit int `json:"context_limit,omitempty"`
	// MaxResultTokens is the largest tool result returned whole; a larger
	// one comes back head-and-tail with its original archived and a
	// read_archive pointer. Zero means DefaultMaxResultTokens, or half of
	// context_limit when that is smaller.
	MaxResultTokens int `json:"max_result_tokens,omitempty"`

	// NudgeStartPct is the usage (percent of context_limit) below which noa
	// never asks the model to compress; PressurePct where asking stops
	// waiting for growth; EmergencyPct where the request turns urgent.
	NudgeStartPct int `json:"nudge_start_pct,omitempty"`
	PressurePct   int `json:"pressure_pct,omitempty"`
	EmergencyPct  int `json:"emergency_pct,omitempty"`
	// MinCompressChars is the least one Compress call must cover, in
	// characters; MinSummaryChars and MaxSummaryChars bound each summary.
	MinCompressChars int `json:"min_compress_chars,omitempty"`
	MinSummaryChars  int `json:"min_summary_chars,omitempty"`
	MaxSummaryChars  int `json:"max_summary_chars,omitempty"`
	// PreserveRecentMessages and PreserveRecentTokens size the recent tail
	// that may not be compressed yet.
	PreserveRecentMessages int `json:"preserve_recent_messages,omitempty"`
	PreserveRecentTokens   int `json:"preserve_recent_tokens,omitempty"`
	// MaxCompressAttempts is how many ignored or failed requests in a row
	// pause nudging until the context has grown further.
	MaxCompressAttempts int `json:"max_compress_attempts,omitempty"`
	// MaxTier is the highest consolidation tier: 1 turns consolidation off,
	// 2 or 3 (the default) allow summaries of summaries. Tier2Trigger and
	// Tier3Trigger are how many blocks of the tier below trigger it.
	MaxTier      int `json:"max_tier,omitempty"`
	Tier2Trigger int `json:"tier2_trigger,omitempty"`
	Tier3Trigger int `json:"tier3_trigger,omitempty"`
	// ProtectedTools are never compressed: exact tool names (as recorded,
	// "server:tool" for call_tool) or a prefix ending in "*".
	ProtectedTools []string `json:"protected_tools,omitempty"`
	// Retention is how long a session untouched is kept before mcproxy
	// removes it (its transcript, state and archives): a number of days
	// ("30d") or a Go duration ("36h"); "0" or "off" keeps every session.
	// Empty means DefaultRetention. See RetentionPeriod.
	Retention string `json:"retention,omitempty"`
	// Fsync is when a session's records are flushed to disk:
	// NoaFsyncEverySecond (the default when empty) hands them to the
	// operating system before the answer (they survive mcproxy crashing)
	// and flushes them at most a second later, so a power loss may take the
	// last second; NoaFsyncAlways flushes them before each call is
	// answered. Compress, its archives and state.json are flushed before
	// they are answered either way. See docs/sessions.md for why the
	// default is the cheaper one.
	Fsync string `json:"fsync,omitempty"`
	// MCP is what noa does over MCP: NoaMCPFull (the default when empty)
	// tags results with refs, nudges and offers Compress; NoaMCPRecall
	// keeps only the size cuts and read_archive, for an agent whose model
	// requests also go through the gateway, which does the compressing
	// (one set of refs, nudges and Compress, not two).
	MCP string `json:"mcp,omitempty"`
	// OnRecordError is what happens to a call whose records cannot be
	// written (a full disk, an I/O error): NoaOnRecordErrorReport (the
	// default when empty) runs it and tells the client in its result that
	// it was not recorded; NoaOnRecordErrorRefuse refuses calls before
	// they run while the session cannot record (each one tries to write
	// again, so recording resumes when the disk recovers). Either way
	// /status shows the session's recording as failing. Issue 26: never a
	// silent gap in a transcript.
	OnRecordError string `json:"on_record_error,omitempty"`
}

// What a call whose records cannot be written gets (NoaConfig.OnRecordError).
const (
	NoaOnRecordErrorReport = "report"
	NoaOnRecordErrorRefuse = "refuse"
)

// RefuseUnrecorded reports whether calls are refused while their session
// cannot record them.
func (n NoaConfig) RefuseUnrecorded() bool { return n.OnRecordError == NoaOnRecordErrorRefuse }

// When records are flushed (NoaConfig.Fsync).
const (
	NoaFsyncAlways      = "always"
	NoaFsyncEverySecond = "every_second"
)

// FlushEvery is how long a record may wait for its flush to disk: 0 for
// NoaFsyncAlways (flushed before the answer), a second for
// NoaFsyncEverySecond and the default.
func (n NoaConfig) FlushEvery() time.Duration {
	if n.Fsync == NoaFsyncAlways {
		return 0
	}
	return time.Second
}

// What noa does over MCP (NoaConfig.MCP).
const (
	NoaMCPFull   = "full"
	NoaMCPRecall = "recall"
)

// RecallOnly reports whether noa keeps only size cuts and read_archive over
// MCP.
func (n NoaConfig) RecallOnly() bool { return n.MCP == NoaMCPRecall }

// DefaultRetention is how long an untouched session is kept by default.
const DefaultRetention = "30d"

// RetentionPeriod is Retention as a duration; 0 means sessions are kept
// forever. Call it on a validated config (an invalid value reads as 0).
func (n NoaConfig) RetentionPeriod() time.Duration {
	d, _ := ParseRetention(n.Retention)
	return d
}

// ParseRetention reads a retention period: "" is DefaultRetention, "0" and
// "off" keep everything (0), "<N>d" is N days, anything else a positive Go
// duration such as "36h".
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		s = DefaultRetention
	case "0", "off":
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("invalid retention %q: want a number of days such as \"30d\", a duration such as \"36h\", or \"off\"", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid retention %q: want a number of days such as \"30d\", a duration such as \"36h\", or \"off\"", s)
	}
	return d, nil
}

// Noa defaults.
const (
	DefaultNoaContextLimit = 200000
	DefaultMaxResultTokens = 25000
)

// Bounds on noa's sizes: below MinNoaContextLimit pacing has no room to
// work; MinMaxResultTokens keeps a cut result's head and tail readable.
const (
	MinNoaContextLimit = 8000
	MaxNoaContextLimit = 10000000
	MinMaxResultTokens = 500
)

// IsEnabled reports whether noa runs (nil Enabled means yes).
func (n NoaConfig) IsEnabled() bool { return n.Enabled == nil || *n.Enabled }

// applyDefaults fills context_limit and max_result_tokens; the tuning knobs
// stay zero, meaning noa's defaults for the window.
func (n *NoaConfig) applyDefaults() {
	if n.ContextLimit == 0 {
		n.ContextLimit = DefaultNoaContextLimit
	}
	if n.MaxResultTokens == 0 {
		// A small window gets a proportionate cut: one result may fill at
		// most half of it (never below the smallest readable cut).
		n.MaxResultTokens = max(MinMaxResultTokens, min(DefaultMaxResultTokens, n.ContextLimit/2))
	}
}

// validate returns the problems with the noa object, paths under path.
func (n NoaConfig) validate(path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(joinPath(path, field), format, args...))
	}
	switch n.MCP {
	case "", NoaMCPFull, NoaMCPRecall:
	default:
		add("mcp", "%q: want %q (refs, nudges and Compress over MCP) or %q (only size cuts and read_archive, when the gateway compresses)", n.MCP, NoaMCPFull, NoaMCPRecall)
	}
	limit := n.ContextLimit
	limitBad := limit != 0 && (limit < MinNoaContextLimit || limit > MaxNoaContextLimit)
	if limitBad {
		add("context_limit", "%d is out of range: want %d to %d tokens", limit, MinNoaContextLimit, MaxNoaContextLimit)
	}
	if limit == 0 {
		limit = DefaultNoaContextLimit
	}
	// Against a context_limit that is itself wrong, max_result_tokens
	// cannot be judged (and may only be its default).
	if m := n.MaxResultTokens; m != 0 && !limitBad && (m < MinMaxResultTokens || m > limit) {
		add("max_result_tokens", "%d is out of range: want %d to context_limit (%d)", m, MinMaxResultTokens, limit)
	}
	pcts := []struct {
		field string
		v     int
	}{{"nudge_start_pct", n.NudgeStartPct}, {"pressure_pct", n.PressurePct}, {"emergency_pct", n.EmergencyPct}}
	for _, p := range pcts {
		if p.v < 0 || p.v > 100 {
			add(p.field, "%d is not a percentage: want 1 to 100", p.v)
		}
	}
	for i := range pcts {
		for j := i + 1; j < len(pcts); j++ {
			if pcts[i].v > 0 && pcts[j].v > 0 && pcts[i].v > pcts[j].v {
				add(pcts[i].field, "%d exceeds %s (%d); want nudge_start_pct <= pressure_pct <= emergency_pct", pcts[i].v, pcts[j].field, pcts[j].v)
			}
		}
	}
	for _, f := range []struct {
		field string
		v     int
	}{
		{"min_compress_chars", n.MinCompressChars}, {"min_summary_chars", n.MinSummaryChars},
		{"max_summary_chars", n.MaxSummaryChars}, {"preserve_recent_messages", n.PreserveRecentMessages},
		{"preserve_recent_tokens", n.PreserveRecentTokens}, {"max_compress_attempts", n.MaxCompressAttempts},
		{"tier2_trigger", n.Tier2Trigger}, {"tier3_trigger", n.Tier3Trigger},
	} {
		if f.v < 0 {
			add(f.field, "must not be negative, got %d (leave it out for the default)", f.v)
		}
	}
	if n.MaxSummaryChars > 0 && n.MinSummaryChars > n.MaxSummaryChars {
		add("min_summary_chars", "%d exceeds max_summary_chars (%d); every summary would be rejected", n.MinSummaryChars, n.MaxSummaryChars)
	}
	if _, err := ParseRetention(n.Retention); err != nil {
		add("retention", "%v", err)
	}
	switch n.Fsync {
	case "", NoaFsyncAlways, NoaFsyncEverySecond:
	default:
		add("fsync", "%q: want %q (the default: written before each call is answered, flushed to disk within a second; a power loss may lose that second) or %q (flushed to disk before each call is answered)", n.Fsync, NoaFsyncEverySecond, NoaFsyncAlways)
	}
	switch n.OnRecordError {
	case "", NoaOnRecordErrorReport, NoaOnRecordErrorRefuse:
	default:
		add("on_record_error", "%q: want %q (the default: the call runs and its result says it was not recorded) or %q (calls are refused while they cannot be recorded)", n.OnRecordError, NoaOnRecordErrorReport, NoaOnRecordErrorRefuse)
	}
	if n.MaxTier < 0 || n.MaxTier > 3 {
		add("max_tier", "%d is not a tier: want 1 (no consolidation), 2 or 3", n.MaxTier)
	}
	for i, t := range n.ProtectedTools {
		p := fmt.Sprintf("protected_tools[%d]", i)
		switch {
		case strings.TrimSpace(t) == "":
			add(p, "is blank")
		case strings.Contains(strings.TrimSuffix(t, "*"), "*"):
			add(p, "%q: only a single trailing * is supported (a prefix match)", t)
		}
	}
	return errs
}
