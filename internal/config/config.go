// Package config owns mcproxy's configuration file: its types, loading with
// ${VAR} expansion, defaults and validation. It also holds the plain tool
// types (Tool, ToolMetadata) the index and the encoding arms share. It is a
// leaf: it starts nothing, opens no connection and logs nothing.
//
// # Variables
//
// Every string value in the file (command, args, env values, cwd, url,
// header values, listen, data_dir, auth_token, durations, ...; not object
// keys) may use environment variables:
//
//	${VAR}            VAR's value; an error naming the field if VAR is unset
//	${VAR:-default}   VAR's value if set and non-empty, else default (which
//	                  may itself use ${...})
//	$$                a literal $, so $${VAR} is the literal text ${VAR}
//
// Any other $ is literal. Expansion happens once, while loading: a value
// that expands to text containing ${...} is not expanded again.
//
// # Strictness
//
// Unknown keys, duplicate keys, values of the wrong JSON type and durations
// given as numbers are errors, each reported with the field's path, e.g.
// `mcpServers.git.comand: unknown key (did you mean "command"?)`. All problems
// are reported at once. ParseServing, which mcproxy's commands use, sets a
// server whose entry has problems aside (Config.Broken) and reads the rest,
// so one bad server never stops the others; a problem with mcproxy's own
// keys still refuses the file.
//
// # Size
//
// The package is about 3,100 lines, at the project's guide of 3,000 for one
// package, and stays one package on purpose: it is the schema of one file.
// Each section (gateway.go, noa.go, profiles.go, store.go, ...) holds its
// types beside their defaults and their validation, and every section is
// read by the one strict decoder in load.go, which reports all problems of
// the file at once with their paths. Splitting the sections into packages
// would separate a type from its checks or split that report.
package config

// Config is the whole configuration file. The mcpServers map has the shape
// Claude Desktop, Cursor and VS Code users already have, so theirs can be
// pasted in unchanged; every other key is mcproxy's own.
type Config struct {
	// MCPServers maps a server name to how to reach it. Names are
	// [A-Za-z0-9_-]+ (they prefix tool ids as "name:tool").
	MCPServers map[string]ServerConfig `json:"mcpServers"`

	// Listen is the HTTP address for streamable HTTP (/mcp) and SSE
	// (/sse, /message). Empty means DefaultListen (loopback only).
	Listen string `json:"listen,omitempty"`
	// DataDir holds the index, sessions and logs. Empty means DefaultDataDir.
	DataDir string `json:"data_dir,omitempty"`
	// Mode is ModeRetrieve (meta tools; the default when empty) or ModeDirect
	// (every upstream tool exposed as server__tool).
	Mode string `json:"mode,omitempty"`
	// RetrieveLimit is how many matches retrieve_tools returns when the call
	// gives no limit. Zero means DefaultRetrieveLimit.
	RetrieveLimit int `json:"retrieve_limit,omitempty"`
	// ListPageSize is how many items one page of the front's tools/list,
	// prompts/list, resources/list and resources/templates/list holds.
	// Zero, the default, answers each list in one page: Claude Code,
	// Claude.ai and Codex read only the first page of tools/list.
	ListPageSize int `json:"list_page_size,omitempty"`
	// Arm is the encoding arm that renders retrieve_tools answers; the
	// index ingests every tool's full metadata whatever it is. Empty means
	// DefaultArm.
	Arm string `json:"arm,omitempty"`
	// Tokenizer names the BPE used to count tokens ("cl100k_base" or
	// "o200k_base"). Empty means DefaultTokenizer.
	Tokenizer string `json:"tokenizer,omitempty"`
	// InitTimeout bounds connecting to and initializing one upstream. Zero
	// means DefaultInitTimeout. A server may override it.
	InitTimeout Duration `json:"init_timeout,omitempty"`
	// CallTimeout bounds one tools/call. Zero means DefaultCallTimeout. A
	// server may override it.
	CallTimeout Duration `json:"call_timeout,omitempty"`
	// AuthToken, when set, is the bearer token every HTTP request must carry.
	// Empty means no authentication (loopback binding still applies).
	AuthToken string `json:"auth_token,omitempty"`
	// LogLevel is a zap level name (debug, info, warn, error). Empty = info.
	LogLevel string `json:"log_level,omitempty"`
	// Noa configures context compression on client sessions (see
	// NoaConfig); the zero value means enabled with defaults.
	Noa NoaConfig `json:"noa,omitempty"`
	// Embeddings configures optional dense retrieval fused with BM25 (see
	// EmbeddingsConfig); the zero value means off.
	Embeddings EmbeddingsConfig `json:"embeddings,omitempty"`
	// Gateway serves the model APIs on the same listener (see
	// GatewayConfig); the zero value means off.
	Gateway GatewayConfig `json:"gateway,omitempty"`
	// Activity is the call history (see ActivityConfig); the zero value
	// records with the defaults.
	Activity ActivityConfig `json:"activity,omitempty"`
	// Tracing exports OpenTelemetry spans of tool calls (see
	// TracingConfig); the zero value means off.
	Tracing TracingConfig `json:"tracing,omitempty"`
	// Store keeps the state replicas share in PostgreSQL (see
	// StoreConfig); the zero value keeps it in files under DataDir.
	Store StoreConfig `json:"store,omitempty"`
	// Synonyms are groups of words retrieve_tools treats as the same when
	// matching a query to tools, added to mcproxy's built-in lexicon:
	// [["k8s", "kubernetes"], ["ticket", "issue"]]. Each group needs two
	// words or more; each word must be one word (a phrase or a code-style
	// identifier is ignored, with a warning in the log).
	Synonyms [][]string `json:"synonyms,omitempty"`
	// Learn, when true (the default), lets retrieve_tools learn from use:
	// the words of searches that led the agent to a tool it then called
	// successfully are kept in <data_dir>/learned.json and searched for
	// that tool (see `mcproxy learned`). false learns nothing and ignores
	// what was learned.
	Learn *bool `json:"learn,omitempty"`
	// Redact are regular expressions (Go syntax) for secrets that session
	// transcripts, archives and logs mask, besides the built-in token shapes
	// (docs/security.md). A pattern with capturing groups masks only what
	// they capture. Empty = the built-in shapes only.
	Redact []string `json:"redact,omitempty"`
	// Quarantine holds every tool of a server seen for the first time until
	// it is approved (mcproxy tools approve), instead of trusting it. A
	// server's own quarantine overrides it. Default false.
	Quarantine bool `json:"quarantine,omitempty"`
	// SessionIdleTimeout closes a client session (and a gateway
	// conversation's host) that has made no request for this long. Zero
	// means DefaultSessionIdleTimeout.
	SessionIdleTimeout Duration `json:"session_idle_timeout,omitempty"`
	// AllowedHosts are the host names, besides localhost, loopback and the
	// listen address, that requests may be addressed to (Host and Origin):
	// the names of a deployment behind a reverse proxy or on a LAN.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
	// Limits caps batches, request bodies, upstream messages and request
	// reads (see LimitsConfig).
	Limits LimitsConfig `json:"limits,omitzero"`
	// Profiles are named slices of the upstream tools, each with its own
	// endpoint and client tokens (see ProfileConfig). None means only the
	// default profile, everything.
	Profiles map[string]ProfileConfig `json:"profiles,omitempty"`
	// OAuthResource, when set, also accepts on the profile endpoints
	// OAuth 2.1 access tokens from an external authorization server (see
	// OAuthResourceConfig). nil accepts only client tokens and auth_token.
	OAuthResource *OAuthResourceConfig `json:"oauth_resource,omitempty"`

	// Broken holds the servers whose entries have problems, each with them
	// on one line (field paths included), when ParseServing set them aside:
	// they are not in MCPServers, and the upstream manager shows them as
	// misconfigured. Never read from nor written to the file; nil when the
	// config was parsed strictly.
	Broken map[string]string `json:"-"`
}

// LearnEnabled reports whether retrieve_tools learns from use.
func (c *Config) LearnEnabled() bool { return c.Learn == nil || *c.Learn }

// ServerConfig says how to reach one upstream MCP server: either a command to
// launch (stdio) or a URL (streamable HTTP or legacy SSE).
type ServerConfig struct {
	// Command and Args launch a stdio server. Env is added to (and
	// overrides) the environment the child inherits, which is a minimal set
	// of mcproxy's own unless InheritEnv says more; Cwd is its working
	// directory (empty = mcproxy's).
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	InheritEnv InheritEnv        `json:"inherit_env,omitzero"`
	Cwd        string            `json:"cwd,omitempty"`

	// URL reaches a remote server; Headers are sent with every request.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth tunes signing in to a server that requires OAuth (see
	// OAuthConfig). nil = sign in with discovery and defaults when the
	// server asks for it.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
	// Transport is TransportStreamableHTTP (default for a URL) or
	// TransportSSE. Type is accepted as an alias because Claude Code and
	// VS Code configs spell it "type" ("stdio", "http", "sse").
	Transport string `json:"transport,omitempty"`
	Type      string `json:"type,omitempty"`

	// Enabled, when false, keeps the server configured but not started.
	// nil means true.
	Enabled *bool `json:"enabled,omitempty"`
	// AllowedTools, when non-empty, is the only tools exposed from this
	// server. DisabledTools are hidden. Both take exact tool names.
	AllowedTools  []string `json:"allowed_tools,omitempty"`
	DisabledTools []string `json:"disabled_tools,omitempty"`

	// InitTimeout and CallTimeout override the top-level values; zero means
	// inherit (ApplyDefaults copies the top-level values into zero ones).
	InitTimeout Duration `json:"init_timeout,omitempty"`
	CallTimeout Duration `json:"call_timeout,omitempty"`

	// Quarantine overrides the top-level quarantine for this server; nil
	// means inherit.
	Quarantine *bool `json:"quarantine,omitempty"`
	// Prefix replaces the default "<server>__" in front of this server's
	// names in direct mode (tools) and in both modes (prompts); "" exposes
	// its names exactly as the server sends them. nil means the default
	// (see NamePrefix).
	Prefix *string `json:"prefix,omitempty"`
	// Protocol pins the MCP revision mcproxy speaks to this server (one of
	// ProtocolVersions). "" means negotiate: 2026-07-28 when the server
	// answers server/discover, else 2025-11-25 through initialize.
	Protocol string `json:"protocol,omitempty"`
	// RateLimit bounds the calls mcproxy sends this server, from every
	// client together (see RateLimitConfig); zero limits nothing.
	RateLimit RateLimitConfig `json:"rate_limit,omitzero"`
	// Tags label the server for profiles: a profile whose "tags" holds one
	// of them includes the whole server (ProfileConfig.Tags).
	Tags []string `json:"tags,omitempty"`
}

// ProtocolVersions are the MCP revisions a server's "protocol" may pin,
// newest first. Those before 2026-07-28 use the initialize handshake.
var ProtocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Modes, transports and defaults.
const (
	ModeRetrieve = "retrieve"
	ModeDirect   = "direct"

	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"

	DefaultListen        = "127.0.0.1:8765"
	DefaultDataDir       = "~/.mcproxy"
	DefaultRetrieveLimit = 5
	DefaultArm           = "brief_sig"
	DefaultTokenizer     = "cl100k_base"
)
