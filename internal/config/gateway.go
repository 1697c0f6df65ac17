package config

import (
	"math"
	"net/url"
	"sort"
	"strings"
)

// GatewayConfig is the "gateway" object: mcproxy as the agent's model
// endpoint, on the same listener as /mcp, projecting every request's
// conversation through noa before it reaches the provider. It is off unless
// enabled is true; an absent section leaves every field zero.
//
//	"gateway": {
//	  "enabled": true,
//	  "anthropic": {"base_url": "https://api.anthropic.com"},
//	  "openai": {"base_url": "https://api.openai.com", "prefix": "/openai"},
//	  "models": {"my-finetune": {"context_window": 32000}}
//	}
type GatewayConfig struct {
	// Enabled turns the gateway's endpoints on. false (or an absent
	// section) leaves them unserved.
	Enabled bool `json:"enabled,omitempty"`
	// Anthropic is where POST /v1/messages and the rest of /v1/ go.
	Anthropic GatewayProvider `json:"anthropic,omitempty"`
	// OpenAI is where <prefix>/v1/chat/completions and the rest of
	// <prefix>/v1/ go.
	OpenAI GatewayProvider `json:"openai,omitempty"`
	// Models overrides or adds context windows by model name. A name
	// matches the request's model exactly or as a prefix followed by "-"
	// (so "claude-sonnet-4-5" covers "claude-sonnet-4-5-20250929"). Among
	// these names and the built-in table the longest match wins, and an
	// entry here wins a tie.
	Models map[string]GatewayModel `json:"models,omitempty"`
	// DefaultContextWindow is the window of a model neither models nor the
	// built-in table knows. Zero means DefaultGatewayContextWindow.
	DefaultContextWindow int `json:"default_context_window,omitempty"`
	// Project, when false, forwards every request unprojected (a plain
	// proxy: no sessions, no Compress). nil means true.
	Project *bool `json:"project,omitempty"`
	// MaxHiddenRounds bounds how many times, within one client request, the
	// gateway answers the model's own Compress/read_archive calls and asks
	// again; after that the model's answer goes back as it is. Zero means
	// DefaultMaxHiddenRounds.
	MaxHiddenRounds int `json:"max_hidden_rounds,omitempty"`
	// CompressAt is the fraction of a conversation's message window its
	// recorded tokens must reach before noa's additions (its tools, system
	// text, ref tags and nudges) are added to the conversation's requests;
	// below it every request goes as the client sent it, so it costs what
	// going straight costs. Once reached, the conversation stays engaged
	// for its whole life. Zero means DefaultCompressAt. The conversation
	// engages at the smaller of this share and CompressAtTokens.
	CompressAt float64 `json:"compress_at,omitempty"`
	// CompressAtTokens engages a conversation once its recorded tokens
	// reach this many, whatever its window: what a compression saves is
	// paid per token read on every later request, so the point where it
	// pays is a size, not a share of the window. Zero means
	// DefaultCompressAtTokens.
	CompressAtTokens int `json:"compress_at_tokens,omitempty"`
	// SummaryRound, when true, makes a conversation's first compression a
	// request for a summary sent as the client's own request plus one
	// instruction, which the provider reads from its prompt cache; only
	// when the model gives none are noa's tools offered with a nudge,
	// which rewrites the cache whole. nil means true.
	SummaryRound *bool `json:"summary_round,omitempty"`
	// Limits bound what parsing one request or one model answer may cost
	// (see GatewayLimits).
	Limits GatewayLimits `json:"limits,omitzero"`
}

// GatewayLimits bound the gateway's parsing, so that no request or model
// answer costs more than its size, linearly, and none grows without end.
// Zero values mean the defaults below; every refusal names its key
// (gateway.limits.*).
type GatewayLimits struct {
	// MaxJSONDepth is the deepest nesting of arrays and objects a
	// projected request may have; a deeper one is refused with a 400.
	MaxJSONDepth int `json:"max_json_depth,omitempty"`
	// MaxStreamEventBytes is the largest server-sent event a model stream
	// may send; a larger one ends the client's stream with an error event.
	MaxStreamEventBytes int64 `json:"max_stream_event_bytes,omitempty"`
	// MaxAnswerBytes is the largest answer the gateway reads from the
	// model: a JSON answer's body, or one round of a stream, summed over
	// its events.
	MaxAnswerBytes int64 `json:"max_answer_bytes,omitempty"`
}

// GatewayProvider is one provider's upstream.
type GatewayProvider struct {
	// BaseURL is the API's root: the request's own path (/v1/messages,
	// /v1/chat/completions, ...) is appended to it, after any path the URL
	// has. Empty means the provider's public API host.
	BaseURL string `json:"base_url,omitempty"`
	// Prefix is the path the provider's API is served under on mcproxy's
	// listener (OpenAI only; Anthropic is served at the root, as Claude Code
	// expects). Empty means DefaultOpenAIPrefix.
	Prefix string `json:"prefix,omitempty"`
}

// GatewayModel describes one model.
type GatewayModel struct {
	// ContextWindow is the model's input window in tokens: the budget noa
	// paces the conversation against. Zero (allowed only beside Prices)
	// means the built-in window for the name.
	ContextWindow int `json:"context_window,omitempty"`
	// Prices are what the provider bills for the model; nil means the
	// built-in table (GatewayConfig.Prices). `mcproxy bench gateway`
	// costs requests with them.
	Prices *ModelPrices `json:"prices,omitempty"`
}

// ModelPrices are a model's prices in USD per million tokens: uncached
// input, output, input read from the prompt cache and input written to it.
// Providers without a cache-write premium (OpenAI) bill CacheWrite as Input.
type ModelPrices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// knownPrices are the providers' published list prices, USD per million
// tokens, matched like knownWindows. Anthropic bills a cache read at 0.1x
// and a 5-minute cache write at 1.25x of input; OpenAI caches prefixes
// automatically at its discount and charges nothing to write them.
var knownPrices = map[string]ModelPrices{
	"claude-opus-4":     {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-opus-4-1":   {Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
	"claude-opus-4-5":   {Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	"claude-sonnet-4":   {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-sonnet-4-5": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-3-7-sonnet": {Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	"claude-haiku-4-5":  {Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
	"claude-3-5-haiku":  {Input: 0.8, Output: 4, CacheRead: 0.08, CacheWrite: 1},
	"gpt-4o":            {Input: 2.5, Output: 10, CacheRead: 1.25, CacheWrite: 2.5},
	"gpt-4o-mini":       {Input: 0.15, Output: 0.6, CacheRead: 0.075, CacheWrite: 0.15},
	"gpt-4.1":           {Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2},
	"gpt-4.1-mini":      {Input: 0.4, Output: 1.6, CacheRead: 0.1, CacheWrite: 0.4},
	"gpt-4.1-nano":      {Input: 0.1, Output: 0.4, CacheRead: 0.025, CacheWrite: 0.1},
	"gpt-5":             {Input: 1.25, Output: 10, CacheRead: 0.125, CacheWrite: 1.25},
	"gpt-5-mini":        {Input: 0.25, Output: 2, CacheRead: 0.025, CacheWrite: 0.25},
	"gpt-5-nano":        {Input: 0.05, Output: 0.4, CacheRead: 0.005, CacheWrite: 0.05},
	"o3":                {Input: 2, Output: 8, CacheRead: 0.5, CacheWrite: 2},
	"o4-mini":           {Input: 1.1, Output: 4.4, CacheRead: 0.275, CacheWrite: 1.1},
}

// Prices returns the prices of model: the longest matching name among
// models with prices and the built-in table (models winning a tie), and
// false when neither knows the model.
func (g GatewayConfig) Prices(model string) (ModelPrices, bool) {
	configured := map[string]ModelPrices{}
	for name, m := range g.Models {
		if m.Prices != nil {
			configured[name] = *m.Prices
		}
	}
	cp, clen := longestMatch(configured, model)
	bp, blen := longestMatch(knownPrices, model)
	switch {
	case clen >= 0 && clen >= blen:
		return cp, true
	case blen >= 0:
		return bp, true
	}
	return ModelPrices{}, false
}

// longestMatch is matchModel for tables whose every entry counts: the value
// of the longest name equal to model or a prefix of it followed by "-",
// and the name's length (-1 when none matched).
func longestMatch[V any](table map[string]V, model string) (V, int) {
	var out V
	best := -1
	for name, v := range table {
		if name == "" || len(name) <= best {
			continue
		}
		if model == name || (strings.HasPrefix(model, name) && model[len(name)] == '-') {
			best, out = len(name), v
		}
	}
	return out, best
}

// Gateway defaults.
const (
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
	DefaultOpenAIBaseURL    = "https://api.openai.com"
	DefaultOpenAIPrefix     = "/openai"
	// DefaultGatewayContextWindow is the window assumed for a model the
	// gateway does not know: the smallest common to current frontier
	// models, so pacing errs towards compressing early rather than
	// overflowing.
	DefaultGatewayContextWindow = 128000
	DefaultMaxHiddenRounds      = 3
	// DefaultCompressAt engages noa at half the message window at the
	// latest: for a small window, DefaultCompressAtTokens would leave too
	// little room to compress before the window fills.
	DefaultCompressAt = 0.5
	// DefaultCompressAtTokens is where one compression pays for itself
	// within a few later requests at Anthropic's cache prices: the first
	// compression takes every compressible range (about 8K to 18K tokens
	// kept: system, tools, task, summary, the recent turns), writes that
	// once at 1.25x plus a summary of about 1K output tokens, and each
	// later request then reads some 20K fewer tokens at 0.1x. Measured on
	// the public runs of docs/benchmarks.md: at 35K the set costs 16.3%
	// less than straight at 100K and no run more than straight at 200K; at
	// 30K a run that ends at 31K costs 1.6% more than straight; at 40K the
	// set saves 14.8%.
	DefaultCompressAtTokens = 35000
	// DefaultMaxJSONDepth is far deeper than any real request nests (a
	// tool's arguments inside a block inside a message: about 10 levels
	// plus the arguments' own).
	DefaultMaxJSONDepth = 512
	// DefaultMaxStreamEventBytes is far above any real event (a delta
	// carries a few tokens).
	DefaultMaxStreamEventBytes = 16 << 20
	// DefaultMaxAnswerBytes is far above any real answer (128K output
	// tokens are about 0.5 MB of text).
	DefaultMaxAnswerBytes = 32 << 20
)

// Bounds on the gateway's knobs. MaxHiddenRoundsLimit keeps one client
// request from turning into an unbounded number of model calls.
const (
	MinContextWindow     = MinNoaContextLimit
	MaxContextWindow     = MaxNoaContextLimit
	MaxHiddenRoundsLimit = 10
	// MaxJSONDepthLimit is encoding/json's own nesting bound, which the
	// gateway's parts that use it cannot pass.
	MaxJSONDepthLimit = 10000
)

// knownWindows are the input windows of models the gateway recognises
// without configuration, matched like GatewayConfig.Models. Figures are the
// providers' published input limits (a window shared with the output, as
// for gpt-5, counts only the input part).
var knownWindows = map[string]int{
	"claude":        200000, // every Claude model from claude-3 on; 1M-token betas need an override
	"gpt-4o":        128000,
	"gpt-4o-mini":   128000,
	"chatgpt-4o":    128000,
	"gpt-4-turbo":   128000,
	"gpt-4":         8192,
	"gpt-4-32k":     32768,
	"gpt-3.5-turbo": 16385,
	"gpt-4.1":       1047576,
	"gpt-4.1-mini":  1047576,
	"gpt-4.1-nano":  1047576,
	"gpt-4.5":       128000,
	"gpt-5":         272000,
	"gpt-5-mini":    272000,
	"gpt-5-nano":    272000,
	"o1":            200000,
	"o1-mini":       128000,
	"o1-pro":        200000,
	"o3":            200000,
	"o3-mini":       200000,
	"o3-pro":        200000,
	"o4-mini":       200000,
}

// WindowSource says where a context window came from.
type WindowSource string

// Window sources.
const (
	WindowConfigured WindowSource = "config"
	WindowBuiltIn    WindowSource = "built-in"
	WindowDefault    WindowSource = "default"
)

// ContextWindow returns the input window of model: the longest matching
// name among models and the built-in table (models winning a tie), else
// default_context_window (or its default).
func (g GatewayConfig) ContextWindow(model string) (int, WindowSource) {
	cn, clen := matchModel(g.Models, model, func(m GatewayModel) int { return m.ContextWindow })
	bn, blen := matchModel(knownWindows, model, func(n int) int { return n })
	switch {
	case clen >= 0 && clen >= blen:
		return cn, WindowConfigured
	case blen >= 0:
		return bn, WindowBuiltIn
	case g.DefaultContextWindow > 0:
		return g.DefaultContextWindow, WindowDefault
	}
	return DefaultGatewayContextWindow, WindowDefault
}

// matchModel finds the longest name in table equal to model or a prefix of
// it followed by "-" (a dated or variant release of the same model), among
// entries with a positive window. It returns the window and the name's
// length, -1 when nothing matched.
func matchModel[V any](table map[string]V, model string, window func(V) int) (int, int) {
	best, n := -1, 0
	for name, v := range table {
		w := window(v)
		if name == "" || len(name) <= best || w <= 0 {
			continue
		}
		if model == name || (strings.HasPrefix(model, name) && model[len(name)] == '-') {
			best, n = len(name), w
		}
	}
	return n, best
}

// ProjectEnabled reports whether requests are projected through noa
// (project is absent or true).
func (g GatewayConfig) ProjectEnabled() bool { return g.Project == nil || *g.Project }

// SummaryRoundEnabled reports whether a conversation's first compression
// is asked for as a summary (SummaryRound).
func (g GatewayConfig) SummaryRoundEnabled() bool { return g.SummaryRound == nil || *g.SummaryRound }

// ApplyDefaults fills the zero fields of an enabled gateway; a disabled one
// stays as written.
func (g *GatewayConfig) ApplyDefaults() {
	if !g.Enabled {
		return
	}
	if g.Anthropic.BaseURL == "" {
		g.Anthropic.BaseURL = DefaultAnthropicBaseURL
	}
	if g.OpenAI.BaseURL == "" {
		g.OpenAI.BaseURL = DefaultOpenAIBaseURL
	}
	if g.OpenAI.Prefix == "" {
		g.OpenAI.Prefix = DefaultOpenAIPrefix
	}
	if g.DefaultContextWindow == 0 {
		g.DefaultContextWindow = DefaultGatewayContextWindow
	}
	if g.MaxHiddenRounds == 0 {
		g.MaxHiddenRounds = DefaultMaxHiddenRounds
	}
	if g.CompressAt == 0 {
		g.CompressAt = DefaultCompressAt
	}
	if g.CompressAtTokens == 0 {
		g.CompressAtTokens = DefaultCompressAtTokens
	}
	l := &g.Limits
	if l.MaxJSONDepth == 0 {
		l.MaxJSONDepth = DefaultMaxJSONDepth
	}
	if l.MaxStreamEventBytes == 0 {
		l.MaxStreamEventBytes = DefaultMaxStreamEventBytes
	}
	if l.MaxAnswerBytes == 0 {
		l.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
}

// reservedPaths are served by the MCP front; an OpenAI prefix may not take
// them, nor /v1 (the Anthropic API's root).
var reservedPaths = []string{"/v1", "/mcp", "/sse", "/message"}

// validate returns the problems with the gateway object, paths under path.
// Like every URL check here it never echoes a URL.
func (g GatewayConfig) validate(path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(joinPath(path, field), format, args...))
	}
	for _, p := range []struct {
		field, example string
		v              GatewayProvider
	}{{"anthropic", DefaultAnthropicBaseURL, g.Anthropic}, {"openai", DefaultOpenAIBaseURL, g.OpenAI}} {
		if p.v.BaseURL == "" {
			continue
		}
		if msg := checkURL(p.v.BaseURL); msg != "" {
			add(p.field+".base_url", "%s", msg)
			continue
		}
		u, _ := url.Parse(p.v.BaseURL)
		if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") {
			add(p.field+".base_url", "ends in /v1: give the API's root (for example %q); the request's own path, /v1/..., is appended to it", p.example)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			add(p.field+".base_url", "must not have a query or fragment: the request's path and query are appended to it")
		}
	}
	if g.Anthropic.Prefix != "" {
		add("anthropic.prefix", "is not supported: the Anthropic API is served at the listener's root (/v1/messages), where Claude Code and the SDKs look for it")
	}
	if pre := g.OpenAI.Prefix; pre != "" {
		switch {
		case !strings.HasPrefix(pre, "/") || pre == "/":
			add("openai.prefix", "%q: want a path such as %q (the OpenAI API is then served at %s/v1/...)", pre, DefaultOpenAIPrefix, DefaultOpenAIPrefix)
		case strings.HasSuffix(pre, "/"):
			add("openai.prefix", "%q ends in /: write it as %q", pre, strings.TrimRight(pre, "/"))
		case !validPathPrefix(pre):
			add("openai.prefix", "%q: use only letters, digits, -, _, . and / between segments", pre)
		default:
			for _, r := range reservedPaths {
				if pre == r || strings.HasPrefix(pre, r+"/") {
					add("openai.prefix", "%q overlaps %s, which mcproxy already serves; pick another, such as %q", pre, r, DefaultOpenAIPrefix)
				}
			}
		}
	}
	names := make([]string, 0, len(g.Models))
	for name := range g.Models {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := "models." + name
		if strings.TrimSpace(name) == "" || name != strings.TrimSpace(name) {
			add(p, "model name %q is blank or has surrounding spaces", name)
		}
		w := g.Models[name].ContextWindow
		if pr := g.Models[name].Prices; pr != nil {
			errs = append(errs, pr.validate(joinPath(path, p+".prices"))...)
		}
		switch {
		case w == 0 && g.Models[name].Prices != nil: // prices alone: the built-in window
		case w == 0:
			add(p+".context_window", "is required: the model's input window in tokens, e.g. 200000 (or give prices alone)")
		case w < MinContextWindow || w > MaxContextWindow:
			add(p+".context_window", "%d is out of range: want %d to %d tokens", w, MinContextWindow, MaxContextWindow)
		}
	}
	if w := g.DefaultContextWindow; w != 0 && (w < MinContextWindow || w > MaxContextWindow) {
		add("default_context_window", "%d is out of range: want %d to %d tokens", w, MinContextWindow, MaxContextWindow)
	}
	if r := g.MaxHiddenRounds; r < 0 || r > MaxHiddenRoundsLimit {
		add("max_hidden_rounds", "%d is out of range: want 1 to %d (leave it out for %d)", r, MaxHiddenRoundsLimit, DefaultMaxHiddenRounds)
	}
	if f := g.CompressAt; f != 0 && !(f > 0 && f < 1) {
		add("compress_at", "%v is out of range: want a fraction of the message window between 0 and 1, such as 0.5 (leave it out for %v)", f, DefaultCompressAt)
	}
	if n := g.CompressAtTokens; n < 0 {
		add("compress_at_tokens", "%d is out of range: want a number of tokens above 0, such as %d (leave it out for %d)", n, DefaultCompressAtTokens, DefaultCompressAtTokens)
	}
	if l := g.Limits; l.MaxJSONDepth < 0 || l.MaxJSONDepth > MaxJSONDepthLimit {
		add("limits.max_json_depth", "%d is out of range: want 1 to %d (leave it out for %d)", l.MaxJSONDepth, MaxJSONDepthLimit, DefaultMaxJSONDepth)
	}
	if n := g.Limits.MaxStreamEventBytes; n < 0 {
		add("limits.max_stream_event_bytes", "must be > 0, got %d", n)
	}
	if n := g.Limits.MaxAnswerBytes; n < 0 {
		add("limits.max_answer_bytes", "must be > 0, got %d", n)
	}
	return errs
}

// validate returns the problems with a price table, paths under path.
func (p ModelPrices) validate(path string) []error {
	var errs []error
	for _, f := range []struct {
		key string
		v   float64
	}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
		if !(f.v > 0 && f.v < 1e6) { // also catches NaN
			errs = append(errs, fieldErr(joinPath(path, f.key), "%v is not a price: want USD per million tokens above 0 and below 1000000, e.g. 3 (input) or 0.3 (cache_read)", f.v))
		}
	}
	if len(errs) == 0 && p.CacheRead > p.Input {
		errs = append(errs, fieldErr(joinPath(path, "cache_read"), "%v is above input (%v): a cache read is billed at most as uncached input", p.CacheRead, p.Input))
	}
	return errs
}

func validPathPrefix(p string) bool {
	for _, seg := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range seg {
			switch {
			case c == '-', c == '_', c == '.', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			default:
				return false
			}
		}
	}
	return true
}

// EngageAt is the recorded tokens at which a conversation with a message
// window of window tokens engages noa: the smaller of compress_at's share
// of the window and compress_at_tokens, each at its default when unset.
func (g GatewayConfig) EngageAt(window int) int {
	f, n := g.CompressAt, g.CompressAtTokens
	if f == 0 {
		f = DefaultCompressAt
	}
	if n == 0 {
		n = DefaultCompressAtTokens
	}
	return min(int(math.Ceil(f*float64(window))), n)
}
