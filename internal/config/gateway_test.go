package config

import (
	"strings"
	"testing"
)

func TestGatewayParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`{"gateway": {"enabled": true}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Gateway
	if !g.Enabled || g.Anthropic.BaseURL != DefaultAnthropicBaseURL || g.OpenAI.BaseURL != DefaultOpenAIBaseURL ||
		g.OpenAI.Prefix != DefaultOpenAIPrefix || g.DefaultContextWindow != DefaultGatewayContextWindow ||
		g.MaxHiddenRounds != DefaultMaxHiddenRounds || !g.ProjectEnabled() ||
		g.Limits != (GatewayLimits{MaxJSONDepth: DefaultMaxJSONDepth, MaxStreamEventBytes: DefaultMaxStreamEventBytes, MaxAnswerBytes: DefaultMaxAnswerBytes}) {
		t.Errorf("got %+v, want an enabled gateway with every default filled", g)
	}

	cfg, err = Parse([]byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Enabled || cfg.Gateway.Anthropic.BaseURL != "" {
		t.Errorf("absent section: got %+v, want the zero value (off)", cfg.Gateway)
	}
}

func TestGatewayParseValues(t *testing.T) {
	cfg, err := Parse([]byte(`{"gateway": {"enabled": true, "project": false, "max_hidden_rounds": 5, "compress_at": 0.7,
		"compress_at_tokens": 30000,
		"anthropic": {"base_url": "http://127.0.0.1:9000"},
		"openai": {"base_url": "https://llm.example.com/api", "prefix": "/oai/compat"},
		"models": {"claude-sonnet-4-5": {"context_window": 1000000}, "local": {"context_window": 32000}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Gateway
	if g.ProjectEnabled() || g.MaxHiddenRounds != 5 || g.CompressAt != 0.7 || g.Anthropic.BaseURL != "http://127.0.0.1:9000" ||
		g.OpenAI.BaseURL != "https://llm.example.com/api" || g.OpenAI.Prefix != "/oai/compat" {
		t.Errorf("got %+v, want the values in the file", g)
	}
	if n := g.EngageAt(1000000); n != 30000 {
		t.Errorf("EngageAt(1M) = %d, want compress_at_tokens (30000)", n)
	}
	if n := g.EngageAt(32000); n != 22400 {
		t.Errorf("EngageAt(32K) = %d, want compress_at's share (22400)", n)
	}
	if n := (GatewayConfig{}).EngageAt(200000); n != DefaultCompressAtTokens {
		t.Errorf("defaults: EngageAt(200K) = %d, want %d", n, DefaultCompressAtTokens)
	}
	if n, src := g.ContextWindow("claude-sonnet-4-5-20250929"); n != 1000000 || src != WindowConfigured {
		t.Errorf("configured prefix: got %d (%s), want 1000000 (config)", n, src)
	}
}

func TestGatewayPrices(t *testing.T) {
	cfg, err := Parse([]byte(`{"gateway": {"models": {
		"claude-sonnet-4-5": {"prices": {"input": 2, "output": 10, "cache_read": 0.2, "cache_write": 2.5}},
		"local": {"context_window": 32000, "prices": {"input": 0.5, "output": 1, "cache_read": 0.05, "cache_write": 0.5}}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Gateway
	tests := []struct {
		model string
		want  ModelPrices
		ok    bool
	}{
		{"claude-sonnet-4-5-20250929", ModelPrices{Input: 2, Output: 10, CacheRead: 0.2, CacheWrite: 2.5}, true},
		{"claude-sonnet-4", ModelPrices{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}, true},
		{"claude-haiku-4-5-20251001", ModelPrices{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25}, true},
		{"gpt-4o-mini-2024-07-18", ModelPrices{Input: 0.15, Output: 0.6, CacheRead: 0.075, CacheWrite: 0.15}, true},
		{"local", ModelPrices{Input: 0.5, Output: 1, CacheRead: 0.05, CacheWrite: 0.5}, true},
		{"unknown-model", ModelPrices{}, false},
	}
	for _, tc := range tests {
		if got, ok := g.Prices(tc.model); got != tc.want || ok != tc.ok {
			t.Errorf("Prices(%q): got %+v, %v; want %+v, %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
	// Prices alone leave the window to the built-in table.
	if n, src := g.ContextWindow("claude-sonnet-4-5"); n != 200000 || src != WindowBuiltIn {
		t.Errorf("window beside prices alone: got %d (%s), want 200000 (built-in)", n, src)
	}
}

func TestGatewayContextWindow(t *testing.T) {
	g := GatewayConfig{Models: map[string]GatewayModel{
		"gpt-4o":      {ContextWindow: 64000},
		"my-model":    {ContextWindow: 16000},
		"my-model-xl": {ContextWindow: 48000},
	}}
	tests := []struct {
		model string
		want  int
		src   WindowSource
	}{
		{"claude-sonnet-4-5-20250929", 200000, WindowBuiltIn},
		{"claude-3-5-haiku-latest", 200000, WindowBuiltIn},
		{"claude-opus-4-1", 200000, WindowBuiltIn},
		{"gpt-4o", 64000, WindowConfigured},            // config wins over the table
		{"gpt-4o-2024-08-06", 64000, WindowConfigured}, // and covers dated releases
		{"gpt-4o-mini", 128000, WindowBuiltIn},         // a longer built-in name is a different model
		{"gpt-4.1-2025-04-14", 1047576, WindowBuiltIn},
		{"gpt-4", 8192, WindowBuiltIn},
		{"gpt-4-turbo-preview", 128000, WindowBuiltIn},
		{"o3-mini", 200000, WindowBuiltIn},
		{"o1-mini-2024-09-12", 128000, WindowBuiltIn},
		{"gpt-5", 272000, WindowBuiltIn},
		{"my-model", 16000, WindowConfigured},
		{"my-model-xl-2", 48000, WindowConfigured},
		{"my-modelx", DefaultGatewayContextWindow, WindowDefault}, // a prefix must end at "-"
		{"claudette", DefaultGatewayContextWindow, WindowDefault},
		{"", DefaultGatewayContextWindow, WindowDefault},
	}
	for _, tc := range tests {
		n, src := g.ContextWindow(tc.model)
		if n != tc.want || src != tc.src {
			t.Errorf("ContextWindow(%q): got %d (%s), want %d (%s)", tc.model, n, src, tc.want, tc.src)
		}
	}
	g.DefaultContextWindow = 50000
	if n, src := g.ContextWindow("unknown"); n != 50000 || src != WindowDefault {
		t.Errorf("configured fallback: got %d (%s), want 50000 (default)", n, src)
	}
}

func TestGatewayValidate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // substrings, each must appear; nil = valid
	}{
		{"defaults", `{"enabled": true}`, nil},
		{"disabled with values", `{"enabled": false, "anthropic": {"base_url": "http://127.0.0.1:1"}}`, nil},
		{"base url with a path", `{"openai": {"base_url": "https://host.example/openai"}}`, nil},
		{"not a url", `{"anthropic": {"base_url": "api.anthropic.com"}}`, []string{"gateway.anthropic.base_url: want an http:// or https:// URL"}},
		{"trailing v1", `{"openai": {"base_url": "https://api.openai.com/v1"}}`, []string{"gateway.openai.base_url: ends in /v1", `"https://api.openai.com"`}},
		{"query", `{"anthropic": {"base_url": "https://x.example/?k=secret"}}`, []string{"gateway.anthropic.base_url: must not have a query"}},
		{"anthropic prefix", `{"anthropic": {"prefix": "/a"}}`, []string{"gateway.anthropic.prefix: is not supported"}},
		{"prefix without slash", `{"openai": {"prefix": "openai"}}`, []string{`gateway.openai.prefix: "openai": want a path`}},
		{"prefix root", `{"openai": {"prefix": "/"}}`, []string{`gateway.openai.prefix: "/": want a path`}},
		{"prefix trailing slash", `{"openai": {"prefix": "/oai/"}}`, []string{`gateway.openai.prefix: "/oai/" ends in /: write it as "/oai"`}},
		{"prefix bad char", `{"openai": {"prefix": "/o ai"}}`, []string{`gateway.openai.prefix: "/o ai": use only`}},
		{"prefix dot segment", `{"openai": {"prefix": "/a/../b"}}`, []string{`gateway.openai.prefix: "/a/../b"`}},
		{"prefix on v1", `{"openai": {"prefix": "/v1"}}`, []string{`gateway.openai.prefix: "/v1" overlaps /v1`}},
		{"prefix under mcp", `{"openai": {"prefix": "/mcp/openai"}}`, []string{"overlaps /mcp"}},
		{"window missing", `{"models": {"m": {}}}`, []string{"gateway.models.m.context_window: is required"}},
		{"price missing", `{"models": {"m": {"prices": {"input": 3, "output": 15, "cache_read": 0.3}}}}`, []string{"gateway.models.m.prices.cache_write: 0 is not a price"}},
		{"price negative", `{"models": {"m": {"context_window": 10000, "prices": {"input": -1, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}}`, []string{"gateway.models.m.prices.input: -1 is not a price"}},
		{"cache read above input", `{"models": {"m": {"prices": {"input": 1, "output": 5, "cache_read": 2, "cache_write": 1.25}}}}`, []string{"gateway.models.m.prices.cache_read: 2 is above input (1)"}},
		{"window too small", `{"models": {"m": {"context_window": 100}}}`, []string{"gateway.models.m.context_window: 100 is out of range"}},
		{"blank model name", `{"models": {" ": {"context_window": 10000}}}`, []string{`gateway.models. : model name " " is blank`}},
		{"default window", `{"default_context_window": 5}`, []string{"gateway.default_context_window: 5 is out of range"}},
		{"hidden rounds", `{"max_hidden_rounds": 11}`, []string{"gateway.max_hidden_rounds: 11 is out of range: want 1 to 10"}},
		{"compress_at one", `{"compress_at": 1}`, []string{"gateway.compress_at: 1 is out of range: want a fraction of the message window between 0 and 1"}},
		{"compress_at negative", `{"compress_at": -0.2}`, []string{"gateway.compress_at: -0.2 is out of range"}},
		{"compress_at_tokens negative", `{"compress_at_tokens": -1}`, []string{"gateway.compress_at_tokens: -1 is out of range"}},
		{"json depth", `{"limits": {"max_json_depth": 20000}}`, []string{"gateway.limits.max_json_depth: 20000 is out of range: want 1 to 10000"}},
		{"negative limits", `{"limits": {"max_stream_event_bytes": -1, "max_answer_bytes": -2}}`, []string{"gateway.limits.max_stream_event_bytes: must be > 0", "gateway.limits.max_answer_bytes: must be > 0"}},
		{"unknown key", `{"enabeld": true}`, []string{"gateway.enabeld: unknown key", `did you mean "enabled"`}},
		{"wrong type", `{"models": {"m": {"context_window": "big"}}}`, []string{"gateway.models.m.context_window: want a whole number"}},
		{"several at once", `{"openai": {"prefix": "x"}, "max_hidden_rounds": -1}`, []string{"gateway.openai.prefix", "gateway.max_hidden_rounds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkSection(t, "gateway", tc.in, tc.want)
			if _, err := Parse([]byte(`{"gateway": `+tc.in+`}`), nil); err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q echoes the URL's query", err)
			}
		})
	}
}
