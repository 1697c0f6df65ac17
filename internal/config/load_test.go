package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// problems lists the messages of an error built by Parse or Validate.
func problems(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, problems(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func testEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func boolPtr(b bool) *bool { return &b }

func TestParseFull(t *testing.T) {
	const in = `{
	  "mcpServers": {
	    "fs": {
	      "command": "${NODE_BIN:-npx}",
	      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT}"],
	      "env": {"TOKEN": "${SECRET}", "LITERAL": "$${NOT_EXPANDED}"},
	      "cwd": "${ROOT}/work",
	      "enabled": true,
	      "allowed_tools": ["read_text_file", "write_file"],
	      "disabled_tools": ["move_file"],
	      "init_timeout": "${FS_INIT:-5s}",
	      "call_timeout": "1m"
	    },
	    "remote": {
	      "url": "https://${HOST}/mcp",
	      "headers": {"Authorization": "Bearer ${SECRET}"},
	      "type": "sse",
	      "transport": "sse",
	      "enabled": false
	    }
	  },
	  "listen": "127.0.0.1:${PORT:-9000}",
	  "data_dir": "${ROOT}/data",
	  "mode": "direct",
	  "retrieve_limit": 7,
	  "list_page_size": 100,
	  "arm": "toon",
	  "tokenizer": "o200k_base",
	  "init_timeout": "10s",
	  "call_timeout": "90s",
	  "auth_token": "${SECRET}",
	  "log_level": "debug",
	  "synonyms": [["k8s", "kubernetes"], ["ticket", "${HOST}"]]
	}`
	got, err := Parse([]byte(in), testEnv(map[string]string{"ROOT": "/srv", "SECRET": "s", "HOST": "example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		MCPServers: map[string]ServerConfig{
			"fs": {
				Command:       "npx",
				Args:          []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv"},
				Env:           map[string]string{"TOKEN": "s", "LITERAL": "${NOT_EXPANDED}"},
				Cwd:           "/srv/work",
				Enabled:       boolPtr(true),
				AllowedTools:  []string{"read_text_file", "write_file"},
				DisabledTools: []string{"move_file"},
				InitTimeout:   Duration(5 * time.Second),
				CallTimeout:   Duration(time.Minute),
			},
			"remote": {
				URL:         "https://example.com/mcp",
				Headers:     map[string]string{"Authorization": "Bearer s"},
				Type:        "sse",
				Transport:   "sse",
				Enabled:     boolPtr(false),
				InitTimeout: Duration(10 * time.Second), // inherited
				CallTimeout: Duration(90 * time.Second),
			},
		},
		Listen:             "127.0.0.1:9000",
		DataDir:            "/srv/data",
		Mode:               ModeDirect,
		RetrieveLimit:      7,
		ListPageSize:       100,
		Arm:                "toon",
		Tokenizer:          "o200k_base",
		InitTimeout:        Duration(10 * time.Second),
		CallTimeout:        Duration(90 * time.Second),
		AuthToken:          "s",
		LogLevel:           "debug",
		Noa:                NoaConfig{ContextLimit: DefaultNoaContextLimit, MaxResultTokens: DefaultMaxResultTokens},
		Synonyms:           [][]string{{"k8s", "kubernetes"}, {"ticket", "example.com"}},
		SessionIdleTimeout: Duration(DefaultSessionIdleTimeout),
		Limits:             defaultLimits,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

// TestParseRoundTrip marshals a config with every field set and parses it
// back: a field added to Config or ServerConfig with a type the decoder does
// not handle fails here (and the non-zero check forces the fixture to grow).
func TestParseRoundTrip(t *testing.T) {
	in := Config{
		MCPServers: map[string]ServerConfig{
			"a": {
				Command: "cmd", Args: []string{"x"}, Env: map[string]string{"K": "v"}, InheritEnv: InheritEnv{Names: []string{"AWS_PROFILE"}}, Cwd: "/w",
				URL: "http://h", Headers: map[string]string{"H": "v"}, Transport: "stdio", Type: "stdio",
				Enabled: boolPtr(true), AllowedTools: []string{"t"}, DisabledTools: []string{"u"},
				InitTimeout: Duration(time.Second), CallTimeout: Duration(2 * time.Second), Quarantine: boolPtr(false),
				Prefix: strPtr(""), Protocol: "2025-11-25",
				RateLimit: RateLimitConfig{CallsPerSecond: 1.5, Burst: 2, MaxConcurrent: 3}, Tags: []string{"work"},
				OAuth: &OAuthConfig{
					ClientID: "c", ClientSecret: "s", TokenEndpointAuthMethod: "client_secret_basic",
					ClientMetadataURL: "https://m/c.json", Scopes: []string{"read"}, Grant: GrantClientCredentials,
					PrivateKey: "k", RefreshToken: "r", RedirectPort: 8400, LoginTimeout: Duration(time.Minute),
				},
			},
		},
		Listen: "127.0.0.1:1", DataDir: "/d", Mode: ModeDirect, RetrieveLimit: 3, ListPageSize: 50, Arm: "a",
		Tokenizer: "o200k_base", InitTimeout: Duration(3 * time.Second), CallTimeout: Duration(4 * time.Second),
		AuthToken: "t", LogLevel: "warn",
		Noa: NoaConfig{
			Enabled: boolPtr(false), ContextLimit: 100000, MaxResultTokens: 9000, NudgeStartPct: 40, PressurePct: 70,
			EmergencyPct: 85, MinCompressChars: 4000, MinSummaryChars: 60, MaxSummaryChars: 9000,
			PreserveRecentMessages: 6, PreserveRecentTokens: 4000, MaxCompressAttempts: 2, MaxTier: 2,
			Tier2Trigger: 4, Tier3Trigger: 3, ProtectedTools: []string{"git:*"}, Retention: "14d", MCP: NoaMCPRecall,
			Fsync: NoaFsyncEverySecond, OnRecordError: NoaOnRecordErrorRefuse,
		},
		Embeddings: EmbeddingsConfig{
			Enabled: boolPtr(true), URL: "http://127.0.0.1:11434/v1", Model: "m", APIKey: "k", Dimensions: 256,
			QueryPrefix: "q: ", DocumentPrefix: "d: ", BatchSize: 8, Timeout: Duration(5 * time.Second),
			QueryTimeout: Duration(time.Second), RetryInterval: Duration(time.Minute), RRFK: 30, DenseWeightPct: 50,
		},
		Gateway: GatewayConfig{
			Enabled: true, Anthropic: GatewayProvider{BaseURL: "http://a", Prefix: "/x"},
			OpenAI: GatewayProvider{BaseURL: "http://o", Prefix: "/o"},
			Models: map[string]GatewayModel{"m": {ContextWindow: 9000}}, DefaultContextWindow: 10000,
			Project: boolPtr(false), MaxHiddenRounds: 2, CompressAt: 0.6, CompressAtTokens: 30000, SummaryRound: boolPtr(false),
			Limits: GatewayLimits{MaxJSONDepth: 64, MaxStreamEventBytes: 1000, MaxAnswerBytes: 2000},
		},
		Synonyms: [][]string{{"k8s", "kubernetes"}},
		Redact:   []string{`tok_[a-z0-9]{8}`}, Quarantine: true, Learn: boolPtr(false),
		SessionIdleTimeout: Duration(time.Minute), AllowedHosts: []string{"mcproxy.lan"},
		Limits:   LimitsConfig{MaxBatch: 5, MaxRequestBytes: 1000, MaxMessageBytes: 2000, ReadTimeout: Duration(time.Second), MaxSessions: 7},
		Activity: ActivityConfig{Enabled: boolPtr(false), Retention: "48h", MaxEntries: 500},
		Tracing:  TracingConfig{Endpoint: "http://127.0.0.1:4318"},
		Store:    StoreConfig{Postgres: "postgres://mcproxy:pw@db.internal:5432/mcproxy"},
		Profiles: map[string]ProfileConfig{"p": {
			Servers: []string{"a"}, Tools: []string{"a:get_*"}, Tags: []string{"work"}, Annotations: []string{"readOnlyHint"},
			Mode: ModeRetrieve, RetrieveLimit: 2, Noa: boolPtr(false), Gateway: boolPtr(true),
			RateLimit:     RateLimitConfig{CallsPerSecond: 4, Burst: 5, MaxConcurrent: 6},
			GatewayModels: map[string]GatewayModel{"claude-sonnet-4-5": {ContextWindow: 100000}},
		}},
		OAuthResource: &OAuthResourceConfig{Issuer: "https://as.example", JWKSURL: "https://as.example/jwks", Audience: "https://mcproxy.example/mcp", ProfilesClaim: "groups"},
	}
	assertAllSet(t, reflect.ValueOf(in.Profiles["p"]), "ProfileConfig")
	assertAllSet(t, reflect.ValueOf(*in.OAuthResource), "OAuthResourceConfig")
	assertAllSet(t, reflect.ValueOf(in.Profiles["p"].RateLimit), "RateLimitConfig")
	assertAllSet(t, reflect.ValueOf(in.Limits), "LimitsConfig")
	assertAllSet(t, reflect.ValueOf(in), "Config")
	assertAllSet(t, reflect.ValueOf(in.Gateway), "GatewayConfig")
	assertAllSet(t, reflect.ValueOf(in.Gateway.Anthropic), "GatewayProvider")
	assertAllSet(t, reflect.ValueOf(in.Gateway.Limits), "GatewayLimits")
	assertAllSet(t, reflect.ValueOf(in.Noa), "NoaConfig")
	assertAllSet(t, reflect.ValueOf(in.Embeddings), "EmbeddingsConfig")
	assertAllSet(t, reflect.ValueOf(in.MCPServers["a"]), "ServerConfig")
	assertAllSet(t, reflect.ValueOf(*in.MCPServers["a"].OAuth), "OAuthConfig")

	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	root, dups, err := parseTree(data)
	if err != nil || dups != nil {
		t.Fatalf("parseTree: %v %v", err, dups)
	}
	d := decoder{getenv: testEnv(nil)}
	var got Config
	d.decode(root, reflect.ValueOf(&got).Elem(), "")
	if len(d.errs) > 0 {
		t.Fatal(errors.Join(d.errs...))
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func assertAllSet(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("json") == "-" {
			continue // not in the file (Config.Broken), so no round trip
		}
		if v.Field(i).IsZero() {
			t.Errorf("fixture leaves %s.%s zero; set it so the round trip covers it", name, v.Type().Field(i).Name)
		}
	}
}

func TestParseErrors(t *testing.T) {
	env := testEnv(map[string]string{"HOME": "/home/ann"})
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "unknown key with suggestion",
			in:   `{"mcpServers": {"git": {"comand": "uvx"}}}`,
			want: []string{
				`mcpServers.git.comand: unknown key (did you mean "command"?)`,
			},
		},
		{
			name: "unknown top-level keys",
			in:   `{"mcpServers": {}, "retreive_limit": 3, "allowedTools": [], "servers": {}}`,
			want: []string{
				`retreive_limit: unknown key (did you mean "retrieve_limit"?)`,
				`allowedTools: unknown key (did you mean "allowed_hosts"?)`,
				`servers: unknown key (VS Code's "servers" is spelled "mcpServers" here; mcproxy import FILE converts a VS Code mcp.json)`,
			},
		},
		{
			name: "camelCase spelling of a snake_case key",
			in:   `{"mcpServers": {"a": {"command": "x", "allowedTools": ["t"], "disabled": true}}}`,
			want: []string{
				`mcpServers.a.allowedTools: unknown key (did you mean "allowed_tools"?)`,
			},
		},
		{
			name: "disabled contradicting enabled",
			in:   `{"mcpServers": {"a": {"command": "x", "disabled": true, "enabled": true}, "b": {"command": "x", "disabled": "yes"}}}`,
			want: []string{
				`mcpServers.a.disabled: contradicts "enabled" (keep one of the two)`,
				`mcpServers.b.disabled: want true or false, got a string`,
			},
		},
		{
			name: "duplicate keys",
			in:   `{"mcpServers": {"git": {"command": "a"}, "git": {"command": "b"}}, "mode": "direct", "mode": "retrieve"}`,
			want: []string{
				`mcpServers.git: duplicate key (the file defines it more than once; keep one)`,
				`mode: duplicate key (the file defines it more than once; keep one)`,
			},
		},
		{
			name: "server names differing in case",
			in:   `{"mcpServers": {"Git": {"command": "a"}, "git": {"command": "b"}}}`,
			want: []string{`mcpServers.git: duplicate server name: "git" differs from "Git" only in case; tool ids must stay unambiguous, rename one`},
		},
		{
			name: "duration as number, bad string, zero",
			in:   `{"mcpServers": {"a": {"command": "x", "init_timeout": 30, "call_timeout": "2 minutes"}}, "init_timeout": "0s", "call_timeout": "-1s"}`,
			want: []string{
				`mcpServers.a.init_timeout: want a duration string such as "30s" or "2m", got a number`,
				`mcpServers.a.call_timeout: invalid duration "2 minutes": want a number with a unit such as "500ms", "30s", "2m" or "1h30m"`,
				`init_timeout: must be > 0, got "0s" (leave the key out for the default)`,
				`call_timeout: must be > 0, got "-1s" (leave the key out for the default)`,
			},
		},
		{
			name: "wrong JSON types",
			in:   `{"mcpServers": {"a": {"command": ["npx"], "args": "-y", "env": {"K": 1}, "enabled": "yes"}}, "retrieve_limit": "5", "listen": 8080}`,
			want: []string{
				`mcpServers.a.command: want a string, got an array`,
				`mcpServers.a.args: want an array, got a string`,
				`mcpServers.a.env.K: want a string, got a number`,
				`mcpServers.a.enabled: want true or false, got a string`,
				`retrieve_limit: want a whole number, got a string`,
				`listen: want a string, got a number`,
			},
		},
		{
			name: "fractional limit",
			in:   `{"mcpServers": {}, "retrieve_limit": 2.5}`,
			want: []string{`retrieve_limit: want a whole number, got 2.5`},
		},
		{
			name: "unset variables name the field",
			in:   `{"mcpServers": {"gh": {"command": "x", "args": ["--root", "${ROOT}"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}}, "auth_token": "${MCPROXY_TOKEN}"}`,
			want: []string{
				`mcpServers.gh.args[1]: ${ROOT} is not set: export ROOT, or give a default with ${ROOT:-value}`,
				`mcpServers.gh.env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set: export GITHUB_TOKEN, or give a default with ${GITHUB_TOKEN:-value}`,
				`auth_token: ${MCPROXY_TOKEN} is not set: export MCPROXY_TOKEN, or give a default with ${MCPROXY_TOKEN:-value}`,
			},
		},
		{
			name: "syntax error has a position",
			in:   "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}",
			want: []string{`line 3, column 26: invalid JSON: invalid character '}' looking for beginning of object key string`},
		},
		{
			name: "truncated file",
			in:   `{"mcpServers": {`,
			want: []string{`invalid JSON: unexpected end of file`},
		},
		{
			name: "not an object",
			in:   `[1, 2]`,
			want: []string{`the config must be a JSON object, got an array`},
		},
		{
			name: "trailing data",
			in:   `{"mcpServers": {}} {}`,
			want: []string{`line 1, column 20: unexpected data after the top-level object`},
		},
		{
			name: "validation runs after decoding",
			in:   `{"mcpServers": {"a:b": {"command": "x"}}, "mode": "lazy"}`,
			want: []string{
				`mode: "lazy" is not a mode: want "retrieve" or "direct"`,
				`mcpServers.a:b: invalid server name "a:b": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.in), env)
			if cfg != nil {
				t.Errorf("got a config with an error, want nil")
			}
			if diff := cmp.Diff(tc.want, problems(err)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
			var fe *FieldError
			if err != nil && !errors.As(err, &fe) {
				t.Errorf("got %T, want a *FieldError inside", err)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		MCPServers: map[string]ServerConfig{"a": {
			Command: "x", InitTimeout: Duration(DefaultInitTimeout), CallTimeout: Duration(DefaultCallTimeout),
		}},
		Listen: DefaultListen, DataDir: ExpandHome(DefaultDataDir), Mode: ModeRetrieve,
		RetrieveLimit: DefaultRetrieveLimit, Arm: DefaultArm, Tokenizer: DefaultTokenizer, LogLevel: DefaultLogLevel,
		InitTimeout: Duration(DefaultInitTimeout), CallTimeout: Duration(DefaultCallTimeout),
		Noa:                NoaConfig{ContextLimit: DefaultNoaContextLimit, MaxResultTokens: DefaultMaxResultTokens},
		SessionIdleTimeout: Duration(DefaultSessionIdleTimeout), Limits: defaultLimits,
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("defaults mismatch (-want +got):\n%s", diff)
	}
}

func TestParseEmptyObject(t *testing.T) {
	cfg, err := Parse([]byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MCPServers == nil || len(cfg.MCPServers) != 0 {
		t.Errorf("got MCPServers %v, want an empty non-nil map", cfg.MCPServers)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "x", "args": ["${MCPROXY_TEST_LOAD_ARG}"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPROXY_TEST_LOAD_ARG", "from-env")
	cfg, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.MCPServers["a"].Args; !cmp.Equal(got, []string{"from-env"}) {
		t.Errorf("got args %q, want [from-env]", got)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"a": {}}, "mode": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	want := "loading config " + bad + ": 2 problems:\n" +
		`mode: "x" is not a mode: want "retrieve" or "direct"` + "\n" +
		`mcpServers.a: set command (a stdio server to launch) or url (an HTTP server to reach)`
	if err == nil || err.Error() != want {
		t.Errorf("got error\n%v\nwant\n%s", err, want)
	}

	if _, err := Load(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got %v, want an error wrapping os.ErrNotExist", err)
	}
}

// TestExampleConfig loads the shipped configs/example.json the way a user
// would, with a home directory and nothing else set.
func TestExampleConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("MCPROXY_FS_ROOT", "")
	t.Setenv("MCPROXY_MEMORY_FILE", "")
	cfg, err := Load(filepath.Join("..", "..", "configs", "example.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, s := range cfg.MCPServers {
		if s.IsEnabled() {
			names = append(names, name+"="+s.TransportKind())
		}
	}
	if diff := cmp.Diff([]string{"everything=stdio", "filesystem=stdio", "memory=stdio"}, sortedCopy(names)); diff != "" {
		t.Errorf("enabled servers mismatch (-want +got):\n%s", diff)
	}
	if got, want := cfg.MCPServers["memory"].Env["MEMORY_FILE_PATH"], home+"/.mcproxy/memory.jsonl"; got != want {
		t.Errorf("got MEMORY_FILE_PATH %q, want %q", got, want)
	}
	if got := cfg.MCPServers["filesystem"].Args; got[len(got)-1] != "/tmp" {
		t.Errorf("got filesystem root %q, want /tmp", got[len(got)-1])
	}
	if got := cfg.DataDir; got != filepath.Join(home, ".mcproxy") {
		t.Errorf("got data_dir %q, want %q", got, filepath.Join(home, ".mcproxy"))
	}
	if !strings.HasPrefix(cfg.MCPServers["everything"].Args[1], "@modelcontextprotocol/server-everything") {
		t.Errorf("everything runs %q, want the npm reference server", cfg.MCPServers["everything"].Args)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// defaultLimits is LimitsConfig after ApplyDefaults.
var defaultLimits = LimitsConfig{
	MaxBatch: DefaultMaxBatch, MaxRequestBytes: DefaultMaxRequestBytes,
	MaxMessageBytes: DefaultMaxMessageBytes, ReadTimeout: Duration(DefaultReadTimeout),
	MaxSessions: DefaultMaxSessions,
}
