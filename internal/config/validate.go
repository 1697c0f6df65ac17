package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Limits on retrieve_limit: below 1 retrieve_tools would answer nothing;
// above 50 an answer costs more context than listing the tools would save.
const (
	MinRetrieveLimit = 1
	MaxRetrieveLimit = 50
)

// Tokenizers and log levels the config accepts.
var (
	Tokenizers = []string{"cl100k_base", "o200k_base"}
	LogLevels  = []string{"debug", "info", "warn", "error"}
)

// DefaultLogLevel is the log level when log_level is empty.
const DefaultLogLevel = "info"

// ApplyDefaults fills every zero field of c with its documented default:
// listen, data_dir, mode, retrieve_limit, arm, tokenizer, log_level and the
// two timeouts; each server's zero timeouts inherit the top-level ones. It
// also expands a leading ~ in data_dir and makes a nil MCPServers an empty
// map. Calling it twice changes nothing the second time.
func (c *Config) ApplyDefaults() {
	if c.MCPServers == nil {
		c.MCPServers = map[string]ServerConfig{}
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	c.DataDir = ExpandHome(c.DataDir)
	if c.Mode == "" {
		c.Mode = ModeRetrieve
	}
	if c.RetrieveLimit == 0 {
		c.RetrieveLimit = DefaultRetrieveLimit
	}
	if c.Arm == "" {
		c.Arm = DefaultArm
	}
	if c.Tokenizer == "" {
		c.Tokenizer = DefaultTokenizer
	}
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.InitTimeout == 0 {
		c.InitTimeout = Duration(DefaultInitTimeout)
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = Duration(DefaultCallTimeout)
	}
	c.Noa.applyDefaults()
	c.Embeddings.applyDefaults()
	c.Gateway.ApplyDefaults()
	c.applyHardeningDefaults()
	c.applyProfileTags()
	for name, s := range c.MCPServers {
		changed := false
		if s.InitTimeout == 0 {
			s.InitTimeout, changed = c.InitTimeout, true
		}
		if s.CallTimeout == 0 {
			s.CallTimeout, changed = c.CallTimeout, true
		}
		if s.ownToolNames(name) {
			changed = true
		}
		if changed {
			c.MCPServers[name] = s
		}
	}
}

// Validate checks c without touching the system (no file, network or
// environment access) and returns every problem found, joined, each a
// *FieldError whose Path names the field. Zero values are valid (they mean
// "default"), so Validate may run before or after ApplyDefaults.
//
// The arm name is not checked here: the arms package owns the list, and
// resolving it is the caller's job.
func (c *Config) Validate() error {
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, fieldErr(path, format, args...))
	}

	if c.Listen != "" {
		if msg := checkListen(c.Listen); msg != "" {
			add("listen", "%s", msg)
		}
	}
	if c.Mode != "" && c.Mode != ModeRetrieve && c.Mode != ModeDirect {
		add("mode", "%q is not a mode: want %q or %q", c.Mode, ModeRetrieve, ModeDirect)
	}
	if c.ListPageSize < 0 {
		add("list_page_size", "must be 0 (every list in one page) or a page size > 0, got %d", c.ListPageSize)
	}
	if c.RetrieveLimit != 0 && (c.RetrieveLimit < MinRetrieveLimit || c.RetrieveLimit > MaxRetrieveLimit) {
		add("retrieve_limit", "%d is out of range: want %d to %d", c.RetrieveLimit, MinRetrieveLimit, MaxRetrieveLimit)
	}
	if c.Tokenizer != "" && !slices.Contains(Tokenizers, c.Tokenizer) {
		add("tokenizer", "%q is not a tokenizer: want one of %s", c.Tokenizer, strings.Join(Tokenizers, ", "))
	}
	if c.LogLevel != "" && !slices.Contains(LogLevels, c.LogLevel) {
		add("log_level", "%q is not a log level: want one of %s", c.LogLevel, strings.Join(LogLevels, ", "))
	}
	if c.InitTimeout < 0 {
		add("init_timeout", "must be > 0, got %s", c.InitTimeout)
	}
	if c.CallTimeout < 0 {
		add("call_timeout", "must be > 0, got %s", c.CallTimeout)
	}
	c.validateHardening(add)

	for i, g := range c.Synonyms {
		words := 0
		for j, w := range g {
			if strings.TrimSpace(w) == "" {
				add(fmt.Sprintf("synonyms[%d][%d]", i, j), "an empty word: remove it")
				continue
			}
			words++
		}
		if words < 2 {
			add(fmt.Sprintf("synonyms[%d]", i), "a group needs at least two words, e.g. [\"k8s\", \"kubernetes\"]")
		}
	}
	errs = append(errs, c.Noa.validate("noa")...)
	errs = append(errs, c.Embeddings.validate("embeddings")...)
	errs = append(errs, c.Gateway.validate("gateway")...)
	errs = append(errs, c.Activity.validate("activity")...)
	errs = append(errs, c.Tracing.validate("tracing")...)
	errs = append(errs, c.Store.validate("store")...)
	errs = append(errs, validateRedact(c.Redact)...)

	names := make([]string, 0, len(c.MCPServers))
	for name := range c.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	folded := map[string]string{}
	for _, name := range names {
		path := "mcpServers." + name
		if !validName(name) {
			add(path, "invalid server name %q: use only letters, digits, _ and - (it prefixes tool ids as \"name:tool\")", name)
		}
		key := strings.ToLower(name)
		if other, ok := folded[key]; ok {
			add(path, "duplicate server name: %q differs from %q only in case; tool ids must stay unambiguous, rename one", name, other)
		} else {
			folded[key] = name
		}
		errs = append(errs, c.MCPServers[name].validate(path)...)
	}
	errs = append(errs, c.validatePrefixes()...)
	errs = append(errs, c.validateProfiles()...)
	errs = append(errs, c.validateOAuthResource()...)
	return errors.Join(errs...)
}

// validate returns the problems with one server, paths under path.
func (s ServerConfig) validate(path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(joinPath(path, field), format, args...))
	}

	hasCommand, hasURL := s.Command != "", s.URL != ""
	switch {
	case hasCommand && hasURL:
		add("", "set either command (a stdio server to launch) or url (an HTTP server to reach), not both")
	case !hasCommand && !hasURL:
		add("", "set command (a stdio server to launch) or url (an HTTP server to reach)")
	}
	if hasCommand && strings.TrimSpace(s.Command) == "" {
		add("command", "is blank")
	}

	// transport and type: each must be a known value, they must agree with
	// each other and with command/url.
	kinds := map[string]string{}
	for _, f := range []struct{ field, value string }{{"transport", s.Transport}, {"type", s.Type}} {
		if f.value == "" {
			continue
		}
		k := normalizeTransport(f.value)
		if k == "" {
			add(f.field, "%q is not a transport: want stdio, streamable-http (also spelled http or streamableHttp) or sse", f.value)
			continue
		}
		kinds[f.field] = k
		switch {
		case k == TransportStdio && hasURL && !hasCommand:
			add(f.field, "%q needs command, but this server has url (use streamable-http or sse)", f.value)
		case k != TransportStdio && hasCommand && !hasURL:
			add(f.field, "%q needs url, but this server has command (use stdio or leave it out)", f.value)
		}
	}
	if t, ty := kinds["transport"], kinds["type"]; t != "" && ty != "" && t != ty {
		add("type", "%q disagrees with transport %q; set one of them", s.Type, s.Transport)
	}
	if s.Protocol != "" && !slices.Contains(ProtocolVersions, s.Protocol) {
		add("protocol", "%q is not an MCP revision mcproxy speaks: want one of %s, or leave it out to negotiate", s.Protocol, strings.Join(ProtocolVersions, ", "))
	} else if s.Protocol == ProtocolVersions[0] && s.TransportKind() == TransportSSE {
		add("protocol", "%q cannot be spoken over legacy SSE (it needs stdio or streamable HTTP)", s.Protocol)
	}

	if hasURL {
		if msg := checkURL(s.URL); msg != "" {
			add("url", "%s", msg)
		}
		if len(s.Args) > 0 {
			add("args", "only a stdio server (command) takes args")
		}
		if len(s.Env) > 0 {
			add("env", "only a stdio server (command) takes env; send values to an HTTP server with headers")
		}
		if s.InheritEnv.All || len(s.InheritEnv.Names) > 0 {
			add("inherit_env", "only a stdio server (command) inherits an environment")
		}
		if s.Cwd != "" {
			add("cwd", "only a stdio server (command) has a working directory")
		}
	}
	errs = append(errs, s.OAuth.validate(joinPath(path, "oauth"), hasURL)...)
	errs = append(errs, s.RateLimit.validate(joinPath(path, "rate_limit"))...)
	for i, tag := range s.Tags {
		if strings.TrimSpace(tag) == "" || tag != strings.TrimSpace(tag) {
			add(fmt.Sprintf("tags[%d]", i), "tag %q is blank or has surrounding spaces", tag)
		}
	}
	if hasCommand && len(s.Headers) > 0 {
		add("headers", "only an HTTP server (url) takes headers; pass values to a stdio server with env")
	}

	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env", "invalid variable name %q: it must be non-empty, without = or NUL", k)
		}
		if strings.ContainsRune(s.Env[k], 0) {
			add("env."+k, "value contains a NUL byte")
		}
	}
	for _, k := range s.InheritEnv.Names {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("inherit_env", "invalid variable name %q: it must be non-empty, without = or NUL", k)
		}
	}
	folded := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if !validHeaderName(k) {
			add("headers", "invalid header name %q", k)
		}
		if other, ok := folded[strings.ToLower(k)]; ok {
			add("headers."+k, "duplicate header: header names ignore case, and %q is already set", other)
		} else {
			folded[strings.ToLower(k)] = k
		}
		if strings.ContainsAny(s.Headers[k], "\r\n\x00") {
			add("headers."+k, "value contains a line break or NUL")
		}
	}

	for _, f := range []struct {
		field string
		names []string
	}{{"allowed_tools", s.AllowedTools}, {"disabled_tools", s.DisabledTools}} {
		for i, n := range f.names {
			if strings.TrimSpace(n) == "" {
				add(fmt.Sprintf("%s[%d]", f.field, i), "empty tool name")
			}
		}
	}
	for _, n := range s.AllowedTools {
		if n != "" && slices.Contains(s.DisabledTools, n) {
			add("disabled_tools", "%q is also in allowed_tools; list it in one of them", n)
		}
	}

	if s.InitTimeout < 0 {
		add("init_timeout", "must be > 0, got %s", s.InitTimeout)
	}
	if s.CallTimeout < 0 {
		add("call_timeout", "must be > 0, got %s", s.CallTimeout)
	}
	return errs
}

// TransportKind resolves how to reach the server: TransportStdio,
// TransportStreamableHTTP or TransportSSE. An explicit transport (or its
// alias type, with "http" and "streamableHttp" meaning streamable-http) wins;
// otherwise command means stdio and url means streamable HTTP. For a server
// that passed Validate the answer is always one of the three; for one with
// neither command nor url it is "".
func (s ServerConfig) TransportKind() string {
	for _, v := range []string{s.Transport, s.Type} {
		if k := normalizeTransport(v); k != "" {
			return k
		}
	}
	switch {
	case s.Command != "":
		return TransportStdio
	case s.URL != "":
		return TransportStreamableHTTP
	}
	return ""
}

// IsEnabled reports whether the server should be started: enabled is absent
// or true.
func (s ServerConfig) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// ToolAllowed reports whether the tool called name is exposed from this
// server: not in disabled_tools and, when allowed_tools is non-empty, in it.
// Names match exactly.
func (s ServerConfig) ToolAllowed(name string) bool {
	if slices.Contains(s.DisabledTools, name) {
		return false
	}
	return len(s.AllowedTools) == 0 || slices.Contains(s.AllowedTools, name)
}

// DefaultConfigPath is where mcproxy looks for its config when no --config
// is given: config.json under DefaultDataDir, with ~ expanded.
func DefaultConfigPath() string {
	return filepath.Join(ExpandHome(DefaultDataDir), "config.json")
}

// ExpandHome replaces a leading "~" or "~/" in p with the current user's home
// directory. Anything else, including "~user/...", is returned unchanged, as
// is p when the home directory cannot be determined.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	return filepath.Join(home, p[2:])
}

func normalizeTransport(v string) string {
	switch v {
	case "stdio":
		return TransportStdio
	case "streamable-http", "http", "streamableHttp":
		return TransportStreamableHTTP
	case "sse":
		return TransportSSE
	}
	return ""
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case c == '_', c == '-', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// validHeaderName reports whether k is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func checkListen(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port (for example %q)", addr, DefaultListen)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("%q has an invalid host %q", addr, host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("%q has an invalid port %q: want a number from 0 to 65535", addr, port)
	}
	return ""
}

// checkURL never echoes the URL: it may carry a token in its query or
// user info, and config errors end up in logs.
func checkURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Sprintf("not a valid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "want an http:// or https:// URL"
	}
	if u.Host == "" {
		return "the URL has no host"
	}
	return ""
}
