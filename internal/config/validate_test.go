package config

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	stdio := ServerConfig{Command: "npx"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "zero config is valid", cfg: Config{}},
		{name: "stdio and http servers", cfg: Config{MCPServers: map[string]ServerConfig{
			"a-b_C9": stdio,
			"h":      {URL: "https://example.com/mcp", Headers: map[string]string{"X-Key": "v"}},
			"s":      {URL: "http://127.0.0.1:3001/sse", Type: "sse"},
			"t":      {URL: "http://127.0.0.1:3001/mcp", Type: "streamableHttp", Transport: "http"},
			"u":      {Command: "x", Type: "stdio"},
		}}},
		{name: "server names", cfg: Config{MCPServers: map[string]ServerConfig{
			"":          stdio,
			"git:hub":   stdio,
			"my server": stdio,
			"ünï":       stdio,
			"a.b":       stdio,
		}}, want: []string{
			`mcpServers.: invalid server name "": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
			`mcpServers.a.b: invalid server name "a.b": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
			`mcpServers.git:hub: invalid server name "git:hub": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
			`mcpServers.my server: invalid server name "my server": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
			`mcpServers.ünï: invalid server name "ünï": use only letters, digits, _ and - (it prefixes tool ids as "name:tool")`,
		}},
		{name: "client metadata documents", cfg: Config{MCPServers: map[string]ServerConfig{
			"none": {URL: "https://a.example/mcp", OAuth: &OAuthConfig{ClientMetadataURL: ClientMetadataNone}},
			"own":  {URL: "https://a.example/mcp", OAuth: &OAuthConfig{ClientMetadataURL: "https://me.example/client.json"}},
			"bad":  {URL: "https://a.example/mcp", OAuth: &OAuthConfig{ClientMetadataURL: "never"}},
		}}, want: []string{
			`mcpServers.bad.oauth.client_metadata_url: want an http:// or https:// URL (or "none" to never use a client ID metadata document)`,
		}},
		{name: "names differing in case", cfg: Config{MCPServers: map[string]ServerConfig{
			"GitHub": stdio, "github": stdio, "GITHUB": stdio,
		}}, want: []string{
			`mcpServers.GitHub: duplicate server name: "GitHub" differs from "GITHUB" only in case; tool ids must stay unambiguous, rename one`,
			`mcpServers.github: duplicate server name: "github" differs from "GITHUB" only in case; tool ids must stay unambiguous, rename one`,
		}},
		{name: "command and url", cfg: Config{MCPServers: map[string]ServerConfig{
			"both":    {Command: "x", URL: "http://h"},
			"neither": {Args: []string{"x"}},
			"blank":   {Command: "  "},
		}}, want: []string{
			`mcpServers.blank.command: is blank`,
			`mcpServers.both: set either command (a stdio server to launch) or url (an HTTP server to reach), not both`,
			`mcpServers.neither: set command (a stdio server to launch) or url (an HTTP server to reach)`,
		}},
		{name: "protocol", cfg: Config{MCPServers: map[string]ServerConfig{
			"ok":     {Command: "x", Protocol: "2025-11-25"},
			"modern": {URL: "http://h", Protocol: "2026-07-28"},
			"bad":    {Command: "x", Protocol: "2026-13-01"},
			"sse":    {URL: "http://h", Transport: "sse", Protocol: "2026-07-28"},
		}}, want: []string{
			`mcpServers.bad.protocol: "2026-13-01" is not an MCP revision mcproxy speaks: want one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05, or leave it out to negotiate`,
			`mcpServers.sse.protocol: "2026-07-28" cannot be spoken over legacy SSE (it needs stdio or streamable HTTP)`,
		}},
		{name: "transport and type", cfg: Config{MCPServers: map[string]ServerConfig{
			"a": {URL: "http://h", Transport: "websocket"},
			"b": {URL: "http://h", Type: "stdio"},
			"c": {Command: "x", Type: "http"},
			"d": {URL: "http://h", Transport: "sse", Type: "http"},
			"e": {Command: "x", Transport: "sse"},
			"f": {URL: "http://h", Type: "SSE"},
		}}, want: []string{
			`mcpServers.a.transport: "websocket" is not a transport: want stdio, streamable-http (also spelled http or streamableHttp) or sse`,
			`mcpServers.b.type: "stdio" needs command, but this server has url (use streamable-http or sse)`,
			`mcpServers.c.type: "http" needs url, but this server has command (use stdio or leave it out)`,
			`mcpServers.d.type: "http" disagrees with transport "sse"; set one of them`,
			`mcpServers.e.transport: "sse" needs url, but this server has command (use stdio or leave it out)`,
			`mcpServers.f.type: "SSE" is not a transport: want stdio, streamable-http (also spelled http or streamableHttp) or sse`,
		}},
		{name: "urls", cfg: Config{MCPServers: map[string]ServerConfig{
			"a": {URL: "ftp://h/x"},
			"b": {URL: "localhost:3000/mcp"},
			"c": {URL: "http:///mcp"},
			"d": {URL: "http://h:port/"},
			"e": {URL: "https://user:secret@example.com/mcp?key=s3cret"},
		}}, want: []string{
			`mcpServers.a.url: want an http:// or https:// URL`,
			`mcpServers.b.url: want an http:// or https:// URL`,
			`mcpServers.c.url: the URL has no host`,
			`mcpServers.d.url: not a valid URL: invalid port ":port" after host`,
		}},
		{name: "stdio-only and http-only fields", cfg: Config{MCPServers: map[string]ServerConfig{
			"h": {URL: "http://h", Args: []string{"x"}, Env: map[string]string{"K": "v"}, InheritEnv: InheritEnv{All: true}, Cwd: "/"},
			"s": {Command: "x", Headers: map[string]string{"K": "v"}},
		}}, want: []string{
			`mcpServers.h.args: only a stdio server (command) takes args`,
			`mcpServers.h.env: only a stdio server (command) takes env; send values to an HTTP server with headers`,
			`mcpServers.h.inherit_env: only a stdio server (command) inherits an environment`,
			`mcpServers.h.cwd: only a stdio server (command) has a working directory`,
			`mcpServers.s.headers: only an HTTP server (url) takes headers; pass values to a stdio server with env`,
		}},
		{name: "env and headers", cfg: Config{MCPServers: map[string]ServerConfig{
			"h": {URL: "http://h", Headers: map[string]string{"Bad Name": "v", "X-A": "1", "x-a": "2", "X-B": "a\r\nX-Evil: 1"}},
			"s": {Command: "x", Env: map[string]string{"A=B": "v", "": "v", "OK": "a\x00b"}, InheritEnv: InheritEnv{Names: []string{"GOOD", "BAD=1"}}},
		}}, want: []string{
			`mcpServers.h.headers: invalid header name "Bad Name"`,
			`mcpServers.h.headers.X-B: value contains a line break or NUL`,
			`mcpServers.h.headers.x-a: duplicate header: header names ignore case, and "X-A" is already set`,
			`mcpServers.s.env: invalid variable name "": it must be non-empty, without = or NUL`,
			`mcpServers.s.env: invalid variable name "A=B": it must be non-empty, without = or NUL`,
			`mcpServers.s.env.OK: value contains a NUL byte`,
			`mcpServers.s.inherit_env: invalid variable name "BAD=1": it must be non-empty, without = or NUL`,
		}},
		{name: "tool filters", cfg: Config{MCPServers: map[string]ServerConfig{
			"a": {Command: "x", AllowedTools: []string{"read", "write", ""}, DisabledTools: []string{"write", " "}},
		}}, want: []string{
			`mcpServers.a.allowed_tools[2]: empty tool name`,
			`mcpServers.a.disabled_tools[1]: empty tool name`,
			`mcpServers.a.disabled_tools: "write" is also in allowed_tools; list it in one of them`,
		}},
		{name: "negative durations", cfg: Config{
			InitTimeout: Duration(-time.Second), CallTimeout: Duration(-time.Minute),
			MCPServers: map[string]ServerConfig{"a": {Command: "x", InitTimeout: Duration(-1), CallTimeout: Duration(-time.Second)}},
		}, want: []string{
			`init_timeout: must be > 0, got -1s`,
			`call_timeout: must be > 0, got -1m0s`,
			`mcpServers.a.init_timeout: must be > 0, got -1ns`,
			`mcpServers.a.call_timeout: must be > 0, got -1s`,
		}},
		{name: "top-level settings", cfg: Config{
			Listen: "8765", Mode: "lazy", RetrieveLimit: 51, Tokenizer: "p50k_base", LogLevel: "verbose",
		}, want: []string{
			`listen: "8765" is not host:port (for example "127.0.0.1:8765")`,
			`mode: "lazy" is not a mode: want "retrieve" or "direct"`,
			`retrieve_limit: 51 is out of range: want 1 to 50`,
			`tokenizer: "p50k_base" is not a tokenizer: want one of cl100k_base, o200k_base`,
			`log_level: "verbose" is not a log level: want one of debug, info, warn, error`,
		}},
		{name: "listen ports and limits", cfg: Config{Listen: "127.0.0.1:99999", RetrieveLimit: -1}, want: []string{
			`listen: "127.0.0.1:99999" has an invalid port "99999": want a number from 0 to 65535`,
			`retrieve_limit: -1 is out of range: want 1 to 50`,
		}},
		{name: "synonym groups", cfg: Config{Synonyms: [][]string{{"k8s", "kubernetes"}, {"alone"}, {"a", " "}, {}}}, want: []string{
			`synonyms[1]: a group needs at least two words, e.g. ["k8s", "kubernetes"]`,
			`synonyms[2][1]: an empty word: remove it`,
			`synonyms[2]: a group needs at least two words, e.g. ["k8s", "kubernetes"]`,
			`synonyms[3]: a group needs at least two words, e.g. ["k8s", "kubernetes"]`,
		}},
		{name: "listen forms that are fine", cfg: Config{Listen: "[::1]:0", RetrieveLimit: 50}},
		{name: "listen all interfaces is allowed", cfg: Config{Listen: ":8765", RetrieveLimit: 1}},
		{name: "listen with named port", cfg: Config{Listen: "localhost:http"}, want: []string{
			`listen: "localhost:http" has an invalid port "http": want a number from 0 to 65535`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, problems(tc.cfg.Validate())); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyDefaultsIdempotentAndKeepsValues(t *testing.T) {
	cfg := Config{
		MCPServers: map[string]ServerConfig{
			"a": {Command: "x", CallTimeout: Duration(time.Second)},
			"b": {URL: "http://h"},
		},
		RetrieveLimit: 9,
		InitTimeout:   Duration(5 * time.Second),
		DataDir:       "~/elsewhere",
	}
	cfg.ApplyDefaults()
	once := cfg
	once.MCPServers = map[string]ServerConfig{}
	for k, v := range cfg.MCPServers {
		once.MCPServers[k] = v
	}
	cfg.ApplyDefaults()
	if diff := cmp.Diff(once, cfg); diff != "" {
		t.Errorf("second ApplyDefaults changed the config (-once +twice):\n%s", diff)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, want, got string }{
		{"retrieve_limit", "9", strconv.Itoa(cfg.RetrieveLimit)},
		{"init_timeout", "5s", cfg.InitTimeout.String()},
		{"call_timeout", DefaultCallTimeout.String(), cfg.CallTimeout.String()},
		{"a.init_timeout inherits", "5s", cfg.MCPServers["a"].InitTimeout.String()},
		{"a.call_timeout kept", "1s", cfg.MCPServers["a"].CallTimeout.String()},
		{"b.call_timeout inherits", DefaultCallTimeout.String(), cfg.MCPServers["b"].CallTimeout.String()},
		{"data_dir", filepath.Join(home, "elsewhere"), cfg.DataDir},
		{"listen", DefaultListen, cfg.Listen},
		{"mode", ModeRetrieve, cfg.Mode},
		{"arm", DefaultArm, cfg.Arm},
		{"tokenizer", DefaultTokenizer, cfg.Tokenizer},
		{"log_level", DefaultLogLevel, cfg.LogLevel},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestTransportKind(t *testing.T) {
	tests := []struct {
		s    ServerConfig
		want string
	}{
		{ServerConfig{Command: "x"}, TransportStdio},
		{ServerConfig{Command: "x", Type: "stdio"}, TransportStdio},
		{ServerConfig{URL: "http://h"}, TransportStreamableHTTP},
		{ServerConfig{URL: "http://h", Type: "http"}, TransportStreamableHTTP},
		{ServerConfig{URL: "http://h", Type: "streamableHttp"}, TransportStreamableHTTP},
		{ServerConfig{URL: "http://h", Transport: "streamable-http"}, TransportStreamableHTTP},
		{ServerConfig{URL: "http://h", Type: "sse"}, TransportSSE},
		{ServerConfig{URL: "http://h", Transport: "sse", Type: "sse"}, TransportSSE},
		{ServerConfig{URL: "http://h", Transport: "bogus"}, TransportStreamableHTTP},
		{ServerConfig{}, ""},
	}
	for _, tc := range tests {
		if got := tc.s.TransportKind(); got != tc.want {
			t.Errorf("TransportKind(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestIsEnabled(t *testing.T) {
	for _, tc := range []struct {
		enabled *bool
		want    bool
	}{{nil, true}, {boolPtr(true), true}, {boolPtr(false), false}} {
		if got := (ServerConfig{Enabled: tc.enabled}).IsEnabled(); got != tc.want {
			t.Errorf("IsEnabled with %v: got %v, want %v", tc.enabled, got, tc.want)
		}
	}
}

func TestToolAllowed(t *testing.T) {
	tests := []struct {
		name string
		s    ServerConfig
		tool string
		want bool
	}{
		{"no filters", ServerConfig{}, "read", true},
		{"allowed", ServerConfig{AllowedTools: []string{"read"}}, "read", true},
		{"not in allowed", ServerConfig{AllowedTools: []string{"read"}}, "write", false},
		{"disabled", ServerConfig{DisabledTools: []string{"write"}}, "write", false},
		{"not disabled", ServerConfig{DisabledTools: []string{"write"}}, "read", true},
		{"exact match only", ServerConfig{AllowedTools: []string{"read"}}, "Read", false},
		{"disabled wins", ServerConfig{AllowedTools: []string{"x"}, DisabledTools: []string{"x"}}, "x", false},
	}
	for _, tc := range tests {
		if got := tc.s.ToolAllowed(tc.tool); got != tc.want {
			t.Errorf("%s: ToolAllowed(%q) = %v, want %v", tc.name, tc.tool, got, tc.want)
		}
	}
}

func TestExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ in, want string }{
		{"~", home},
		{"~/", home},
		{"~/.mcproxy/x", filepath.Join(home, ".mcproxy", "x")},
		{"~ann/x", "~ann/x"},
		{"/abs/~/x", "/abs/~/x"},
		{"rel", "rel"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := ExpandHome(tc.in); got != tc.want {
			t.Errorf("ExpandHome(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got, want := DefaultConfigPath(), filepath.Join(home, ".mcproxy", "config.json"); got != want {
		t.Errorf("DefaultConfigPath() = %q, want %q", got, want)
	}
}

func TestValidateRedact(t *testing.T) {
	c := &Config{Redact: []string{`tok_[a-z]{8}`, `(`, `x*`}}
	c.ApplyDefaults()
	got := problems(c.Validate())
	want := []string{
		"redact[1]: not a regular expression (Go syntax): error parsing regexp: missing closing ): `(`",
		"redact[2]: \"x*\" matches the empty string; make it match the secret itself (e.g. `tok_[A-Za-z0-9]{20,}`)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestQuarantined(t *testing.T) {
	yes, no := true, false
	c := &Config{Quarantine: true, MCPServers: map[string]ServerConfig{"a": {Quarantine: &no}, "b": {Quarantine: &yes}, "c": {}}}
	for server, want := range map[string]bool{"a": false, "b": true, "c": true, "unknown": true} {
		if got := c.Quarantined(server); got != want {
			t.Errorf("Quarantined(%q) = %v, want %v", server, got, want)
		}
	}
	c.Quarantine = false
	if c.Quarantined("c") || !c.Quarantined("b") {
		t.Error("top-level false: want c trusted and b quarantined")
	}
}
