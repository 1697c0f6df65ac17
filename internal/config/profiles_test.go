package config

import (
	"strings"
	"testing"
)

// A file with profiles parses into them, and Profile fills the inherited
// settings.
func TestParseProfiles(t *testing.T) {
	data := `{
	  "mcpServers": {"github": {"url": "https://example.com/mcp", "rate_limit": {"calls_per_second": 5, "max_concurrent": 2}},
	                 "memory": {"command": "mcp-memory"}},
	  "mode": "direct",
	  "profiles": {
	    "review": {"tools": ["github:get_*"], "annotations": ["readOnlyHint"], "retrieve_limit": 3,
	               "rate_limit": {"calls_per_second": 2.5, "burst": 4}},
	    "desk": {"servers": ["memory"], "mode": "retrieve", "noa": false, "gateway": false}
	  }
	}`
	c, err := Parse([]byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.MCPServers["github"].RateLimit; got != (RateLimitConfig{CallsPerSecond: 5, MaxConcurrent: 2}) {
		t.Errorf("github rate_limit = %+v", got)
	}
	r, ok := c.Profile("review")
	if !ok || r.Mode != ModeDirect || r.RetrieveLimit != 3 || r.RateLimit.Burst != 4 || r.RateLimit.CallsPerSecond != 2.5 {
		t.Errorf("Profile(review) = %+v, %v; want mode inherited (direct), its own limit 3 and rate", r, ok)
	}
	d, _ := c.Profile("desk")
	if d.Mode != ModeRetrieve || d.RetrieveLimit != DefaultRetrieveLimit || d.Noa == nil || *d.Noa || d.Gateway == nil || *d.Gateway {
		t.Errorf("Profile(desk) = %+v", d)
	}
	if def, ok := c.Profile(""); !ok || def.Mode != ModeDirect || len(def.Servers) != 0 {
		t.Errorf("Profile(\"\") = %+v, %v; want the top-level settings", def, ok)
	}
	if _, ok := c.Profile("nope"); ok {
		t.Error("Profile(nope) found a profile that is not configured")
	}
}

// Every profile problem is reported with its field path and how to fix it.
func TestValidateProfiles(t *testing.T) {
	c := &Config{
		MCPServers: map[string]ServerConfig{
			"github": {URL: "https://example.com/mcp", RateLimit: RateLimitConfig{CallsPerSecond: -1, Burst: 2, MaxConcurrent: -3}, Tags: []string{"work", " "}},
		},
		Profiles: map[string]ProfileConfig{
			"bad name": {Servers: []string{"github"}},
			"tagged":   {Tags: []string{"work", "home"}},
			"empty":    {},
			"p": {
				Servers:       []string{"gthub"},
				Tools:         []string{"github", "nope:x", "github:[", "github:get_*"},
				Annotations:   []string{"readOnly", "!destructiveHint"},
				Mode:          "fast",
				RetrieveLimit: 99,
				RateLimit:     RateLimitConfig{Burst: 3},
				GatewayModels: map[string]GatewayModel{"claude-x": {ContextWindow: 10}, "ok": {ContextWindow: 100000, Prices: &ModelPrices{Input: 1}}},
			},
			"nogw": {Servers: []string{"github"}, Gateway: boolPtr(false), GatewayModels: map[string]GatewayModel{"m": {ContextWindow: 100000}}},
		},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted broken profiles")
	}
	for _, want := range []string{
		`profiles.bad name: invalid profile name "bad name"`,
		`profiles.empty: includes nothing: give servers, tools`,
		`profiles.p.servers[0]: "gthub" is not a server in mcpServers: want one of github`,
		`profiles.p.tools[0]: "github" is not "server:tool"`,
		`profiles.p.tools[1]: "nope" is not a server in mcpServers`,
		`profiles.p.tools[2]: "[" is not a valid glob`,
		`profiles.p.annotations[0]: "readOnly" is not an annotation hint: want one of readOnlyHint`,
		`profiles.p.mode: "fast" is not a mode`,
		`profiles.p.retrieve_limit: 99 is out of range`,
		`profiles.p.rate_limit.burst: has no effect without calls_per_second`,
		`profiles.p.gateway_models.claude-x.context_window: 10 is out of range`,
		`profiles.p.gateway_models.ok.prices: prices are the gateway's`,
		`profiles.nogw.gateway_models: has no effect with "gateway": false`,
		`mcpServers.github.rate_limit.calls_per_second: must be > 0`,
		`mcpServers.github.rate_limit.max_concurrent: must be > 0`,
		`mcpServers.github.tags[1]: tag " " is blank`,
		`profiles.tagged.tags[1]: no server in mcpServers has the tag "home": add "tags": ["home"] to each server`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got\n%v\nwant a problem containing %q", err, want)
		}
	}
	for _, unwanted := range []string{"tools[3]", "annotations[1]", "tags[0]", "profiles.tagged: includes nothing"} {
		if strings.Contains(err.Error(), unwanted) {
			t.Errorf("a valid entry was refused (%s): %v", unwanted, err)
		}
	}
}

// A profile's tags include, as whole servers, the servers tagged so, next
// to those it names; the matcher then treats them as named servers.
func TestProfileTags(t *testing.T) {
	data := `{
	  "mcpServers": {"github": {"url": "https://example.com/mcp", "tags": ["work", "code"]},
	                 "jira": {"url": "https://example.com/jira", "tags": ["work"]},
	                 "memory": {"command": "mcp-memory", "tags": ["home"]}},
	  "profiles": {"work": {"tags": ["work"], "servers": ["github"], "tools": ["memory:read_*"]}}
	}`
	c, err := Parse([]byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Profile("work")
	if got := strings.Join(p.Servers, ","); got != "github,jira" {
		t.Errorf("profile work's servers: got %s, want github,jira (named once, then tagged)", got)
	}
	if got := strings.Join(p.Tools, ","); got != "memory:read_*" {
		t.Errorf("profile work's tools: got %s, want them as written", got)
	}
}

// An unknown key inside a profile is refused with a suggestion, as
// everywhere else in the file.
func TestProfileUnknownKey(t *testing.T) {
	_, err := Parse([]byte(`{"mcpServers": {"m": {"command": "x"}}, "profiles": {"a": {"server": ["m"]}}}`), nil)
	if err == nil || !strings.Contains(err.Error(), `profiles.a.server: unknown key (did you mean "servers"?)`) {
		t.Fatalf("got %v", err)
	}
}

// A profile's gateway_models override the gateway's windows for its
// clients; a model it does not name keeps the gateway's.
func TestProfileContextWindow(t *testing.T) {
	g := GatewayConfig{Models: map[string]GatewayModel{"claude-sonnet-4-5": {ContextWindow: 150000}, "other": {ContextWindow: 50000}}}
	p := ProfileConfig{GatewayModels: map[string]GatewayModel{"claude-sonnet-4-5": {ContextWindow: 60000}}}
	for _, tc := range []struct {
		model string
		want  int
	}{{"claude-sonnet-4-5-20250929", 60000}, {"other", 50000}} {
		if got, _ := p.ContextWindow(g, tc.model); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.model, got, tc.want)
		}
	}
	if got, _ := (ProfileConfig{}).ContextWindow(g, "claude-sonnet-4-5"); got != 150000 {
		t.Errorf("no gateway_models: got %d, want the gateway's 150000", got)
	}
	if len(g.Models) != 2 || g.Models["claude-sonnet-4-5"].ContextWindow != 150000 {
		t.Errorf("the gateway's models changed: %v", g.Models)
	}
}

// oauth_resource needs its issuer, key set and audience as URLs where they
// are URLs, and profiles to open.
func TestValidateOAuthResource(t *testing.T) {
	t.Parallel()
	c := &Config{OAuthResource: &OAuthResourceConfig{Issuer: "as.example", JWKSURL: ""}}
	err := c.Validate()
	for _, want := range []string{
		`oauth_resource.jwks_url: is required`,
		`oauth_resource.audience: is required`,
		`oauth_resource.issuer: "as.example" is not an http(s) URL`,
		`oauth_resource: opens profiles, and the config has none`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got\n%v\nwant a problem containing %q", err, want)
		}
	}
	ok := &Config{
		MCPServers:    map[string]ServerConfig{"m": {Command: "x"}},
		Profiles:      map[string]ProfileConfig{"p": {Servers: []string{"m"}}},
		OAuthResource: &OAuthResourceConfig{Issuer: "https://as.example", JWKSURL: "https://as.example/jwks", Audience: "mcproxy"},
	}
	ok.ApplyDefaults()
	if err := ok.Validate(); err != nil {
		t.Errorf("a complete oauth_resource: %v", err)
	}
}
