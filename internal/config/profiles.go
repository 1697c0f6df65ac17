package config

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
)

// ProfileConfig is one entry of "profiles": a named slice of the upstream
// tools, prompts and resources, served at /mcp/p/<name> and /sse/p/<name>
// and over stdio with `serve --stdio --profile NAME`, with its own client
// tokens (`mcproxy tokens create NAME --profile P`). The default profile,
// with no name, is everything. internal/profile decides what a profile
// includes.
type ProfileConfig struct {
	// Servers are whole servers the profile includes: every tool, prompt
	// and resource of each.
	Servers []string `json:"servers,omitempty"`
	// Tools are "server:tool" patterns the profile includes besides its
	// whole servers; the tool part may use path.Match globs
	// ("github:get_*", "github:*"). A server named here contributes only
	// the matching tools, but its prompts and resources too.
	Tools []string `json:"tools,omitempty"`
	// Tags include, as whole servers, every server whose own "tags"
	// (mcpServers.<name>.tags) hold one of them: a server tagged later
	// joins the profile without editing it. ApplyDefaults adds them to
	// Servers.
	Tags []string `json:"tags,omitempty"`
	// Annotations, when non-empty, narrow the profile to the tools whose
	// annotations hold each hint named: "readOnlyHint", "idempotentHint",
	// "destructiveHint" and "openWorldHint" require the hint true, a name
	// after "!" requires it false or absent. With no servers and no tools,
	// the annotations select from every server.
	Annotations []string `json:"annotations,omitempty"`

	// Mode, RetrieveLimit and Noa override the top-level mode,
	// retrieve_limit and noa.enabled for this profile's clients; the zero
	// values inherit.
	Mode          string `json:"mode,omitempty"`
	RetrieveLimit int    `json:"retrieve_limit,omitempty"`
	Noa           *bool  `json:"noa,omitempty"`
	// Gateway, when false, refuses this profile's tokens at the model-API
	// gateway; nil means allowed when the gateway is on.
	Gateway *bool `json:"gateway,omitempty"`
	// GatewayModels override or add, for this profile's tokens at the
	// gateway, the context windows of gateway.models (same shape and
	// matching: {"claude-sonnet-4-5": {"context_window": 100000}}); a
	// model it does not name keeps the gateway's window. nil: the
	// gateway's windows.
	GatewayModels map[string]GatewayModel `json:"gateway_models,omitempty"`

	// RateLimit bounds the calls of each client token of this profile
	// (one bucket per token, not one shared by the profile).
	RateLimit RateLimitConfig `json:"rate_limit,omitzero"`
}

// RateLimitConfig is a token bucket and a concurrency cap, for a client
// token (profiles.<name>.rate_limit) or an upstream
// (mcpServers.<name>.rate_limit). The zero value limits nothing.
type RateLimitConfig struct {
	// CallsPerSecond is the sustained rate of tool calls allowed; zero
	// means no rate limit.
	CallsPerSecond float64 `json:"calls_per_second,omitempty"`
	// Burst is how many calls may come at once above the rate; zero means
	// the rate rounded up (at least 1).
	Burst int `json:"burst,omitempty"`
	// MaxConcurrent is the most calls in flight at once; zero means no cap.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
}

// Annotation hints a profile may select on (the MCP ToolAnnotations
// booleans).
var AnnotationHints = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// IsZero reports whether r limits nothing.
func (r RateLimitConfig) IsZero() bool { return r == RateLimitConfig{} }

func (r RateLimitConfig) validate(at string) []error {
	var errs []error
	if r.CallsPerSecond < 0 {
		errs = append(errs, fieldErr(joinPath(at, "calls_per_second"), "must be > 0 (or left out for no rate limit), got %g", r.CallsPerSecond))
	}
	if r.Burst < 0 {
		errs = append(errs, fieldErr(joinPath(at, "burst"), "must be > 0, got %d", r.Burst))
	}
	if r.Burst > 0 && r.CallsPerSecond == 0 {
		errs = append(errs, fieldErr(joinPath(at, "burst"), "has no effect without calls_per_second: set calls_per_second too, or remove burst"))
	}
	if r.MaxConcurrent < 0 {
		errs = append(errs, fieldErr(joinPath(at, "max_concurrent"), "must be > 0 (or left out for no cap), got %d", r.MaxConcurrent))
	}
	return errs
}

// OAuthResourceConfig makes the profile endpoints an OAuth 2.1 protected
// resource of an external authorization server: a bearer JWT signed by
// one of the server's keys (JWKSURL), from Issuer, whose audience includes
// Audience and which has not expired, opens the profiles its
// ProfilesClaim names. The endpoints publish their protected resource
// metadata (RFC 9728) at /.well-known/oauth-protected-resource/mcp/p/<name>.
type OAuthResourceConfig struct {
	// Issuer is the authorization server's issuer identifier (the "iss"
	// of its tokens). Required.
	Issuer string `json:"issuer"`
	// JWKSURL is where it publishes its JSON Web Key Set. Required.
	JWKSURL string `json:"jwks_url"`
	// Audience is mcproxy's resource identifier there (the "aud" its
	// tokens for mcproxy carry). Required.
	Audience string `json:"audience"`
	// ProfilesClaim names the claim listing a token's profiles; empty
	// means "mcproxy_profiles".
	ProfilesClaim string `json:"profiles_claim,omitempty"`
}

// validateOAuthResource checks oauth_resource.
func (c *Config) validateOAuthResource() []error {
	o := c.OAuthResource
	if o == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct{ key, value string }{{"issuer", o.Issuer}, {"jwks_url", o.JWKSURL}, {"audience", o.Audience}} {
		if f.value == "" {
			errs = append(errs, fieldErr("oauth_resource."+f.key, "is required: the authorization server's issuer, the URL of its key set and mcproxy's audience there"))
		}
	}
	for _, f := range []struct{ key, value string }{{"issuer", o.Issuer}, {"jwks_url", o.JWKSURL}} {
		if u, err := url.Parse(f.value); f.value != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			errs = append(errs, fieldErr("oauth_resource."+f.key, "%q is not an http(s) URL", f.value))
		}
	}
	if len(c.Profiles) == 0 {
		errs = append(errs, fieldErr("oauth_resource", "opens profiles, and the config has none: add one under \"profiles\""))
	}
	return errs
}

// validateProfiles checks every profile: a valid name, known servers,
// well-formed patterns and hints, and the per-profile settings.
func (c *Config) validateProfiles() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := c.Profiles[name]
		at := "profiles." + name
		add := func(field, format string, args ...any) {
			errs = append(errs, fieldErr(joinPath(at, field), format, args...))
		}
		if !validName(name) {
			add("", "invalid profile name %q: use only letters, digits, _ and - (it is a path segment, /mcp/p/<name>)", name)
		}
		if len(p.Servers) == 0 && len(p.Tools) == 0 && len(p.Tags) == 0 && len(p.Annotations) == 0 {
			add("", "includes nothing: give servers, tools (\"server:tool\", globs allowed), tags (of mcpServers.<name>.tags) or annotations (e.g. [\"readOnlyHint\"])")
		}
		for i, tag := range p.Tags {
			// A server set aside for its problems (Broken) may be the one
			// with the tag: its entry never refuses the file.
			if len(c.tagged(tag)) == 0 && len(c.Broken) == 0 {
				add(fmt.Sprintf("tags[%d]", i), "no server in mcpServers has the tag %q: add \"tags\": [%q] to each server the profile should include, or remove it here", tag, tag)
			}
		}
		for i, s := range p.Servers {
			if msg := c.unknownServer(s); msg != "" {
				add(fmt.Sprintf("servers[%d]", i), "%s", msg)
			}
		}
		for i, t := range p.Tools {
			f := fmt.Sprintf("tools[%d]", i)
			server, tool, ok := SplitToolID(t)
			if !ok {
				add(f, "%q is not \"server:tool\": name the server, a colon and the tool (globs allowed in the tool, e.g. \"github:get_*\")", t)
				continue
			}
			if msg := c.unknownServer(server); msg != "" {
				add(f, "%s", msg)
			}
			if _, err := path.Match(tool, ""); err != nil {
				add(f, "%q is not a valid glob: %v", tool, err)
			}
		}
		for i, a := range p.Annotations {
			if !slices.Contains(AnnotationHints, strings.TrimPrefix(a, "!")) {
				add(fmt.Sprintf("annotations[%d]", i), "%q is not an annotation hint: want one of %s, optionally after \"!\" for false", a, strings.Join(AnnotationHints, ", "))
			}
		}
		if p.Mode != "" && p.Mode != ModeRetrieve && p.Mode != ModeDirect {
			add("mode", "%q is not a mode: want %q or %q", p.Mode, ModeRetrieve, ModeDirect)
		}
		if p.RetrieveLimit != 0 && (p.RetrieveLimit < MinRetrieveLimit || p.RetrieveLimit > MaxRetrieveLimit) {
			add("retrieve_limit", "%d is out of range: want %d to %d", p.RetrieveLimit, MinRetrieveLimit, MaxRetrieveLimit)
		}
		errs = append(errs, p.RateLimit.validate(joinPath(at, "rate_limit"))...)
		for _, model := range slices.Sorted(maps.Keys(p.GatewayModels)) {
			f := "gateway_models." + model
			if strings.TrimSpace(model) == "" || model != strings.TrimSpace(model) {
				add(f, "model name %q is blank or has surrounding spaces", model)
			}
			if p.GatewayModels[model].Prices != nil {
				add(f+".prices", "prices are the gateway's (gateway.models); a profile sets only context_window")
			}
			if w := p.GatewayModels[model].ContextWindow; w < MinContextWindow || w > MaxContextWindow {
				add(f+".context_window", "%d is out of range: want the model's input window for this profile's clients, %d to %d tokens", w, MinContextWindow, MaxContextWindow)
			}
		}
		if p.Gateway != nil && !*p.Gateway && len(p.GatewayModels) > 0 {
			add("gateway_models", "has no effect with \"gateway\": false (the profile's tokens may not use the gateway): remove one of them")
		}
	}
	return errs
}

// ContextWindow is model's input window for a client of profile p at the
// gateway: p's gateway_models when one matches model (matched as
// gateway.models are, the longer name winning), else g's.
func (p ProfileConfig) ContextWindow(g GatewayConfig, model string) (int, WindowSource) {
	if len(p.GatewayModels) > 0 {
		merged := maps.Clone(g.Models)
		if merged == nil {
			merged = map[string]GatewayModel{}
		}
		maps.Copy(merged, p.GatewayModels)
		g.Models = merged
	}
	return g.ContextWindow(model)
}

// tagged is the servers whose tags hold tag, sorted.
func (c *Config) tagged(tag string) []string {
	var out []string
	for name, s := range c.MCPServers {
		if slices.Contains(s.Tags, tag) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// applyProfileTags adds to each profile's Servers the servers its Tags
// name, so everything that reads a profile (its matcher, setup, the
// gateway) sees them as servers it named.
func (c *Config) applyProfileTags() {
	for name, p := range c.Profiles {
		if len(p.Tags) == 0 {
			continue
		}
		servers := slices.Clone(p.Servers)
		for _, tag := range p.Tags {
			for _, s := range c.tagged(tag) {
				if !slices.Contains(servers, s) {
					servers = append(servers, s)
				}
			}
		}
		p.Servers = servers
		c.Profiles[name] = p
	}
}

// unknownServer is why name cannot be a profile's server, or "".
func (c *Config) unknownServer(name string) string {
	if _, ok := c.MCPServers[name]; ok {
		return ""
	}
	if _, ok := c.Broken[name]; ok {
		return ""
	}
	known := slices.Sorted(maps.Keys(c.MCPServers))
	if len(known) == 0 {
		return fmt.Sprintf("%q is not a server in mcpServers (none is configured)", name)
	}
	return fmt.Sprintf("%q is not a server in mcpServers: want one of %s", name, strings.Join(known, ", "))
}

// Profile returns the named profile's settings with the top-level mode,
// retrieve_limit and noa.enabled filled in where it leaves them zero. ok is
// false when no profile has that name; "" is the default profile
// (everything, the top-level settings).
func (c *Config) Profile(name string) (p ProfileConfig, ok bool) {
	if name != "" {
		if p, ok = c.Profiles[name]; !ok {
			return ProfileConfig{}, false
		}
	}
	if p.Mode == "" {
		p.Mode = c.Mode
	}
	if p.RetrieveLimit == 0 {
		p.RetrieveLimit = c.RetrieveLimit
	}
	if p.Noa == nil {
		p.Noa = c.Noa.Enabled
	}
	return p, true
}
