package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/profile"
)

// stdioProfile is the profile a `serve --stdio --profile NAME` process
// serves: its one client sees only the profile's tools, prompts and
// resources. The process narrows its config to the profile (servers it
// does not include are never started, so their prompts and resources are
// nowhere) and hides the tools it excludes at the upstream layer, so every
// meta tool and call_tool see the profile's view alone.
type stdioProfile struct {
	name    string
	matcher atomic.Pointer[profile.Matcher]
}

// narrow applies the profile to c (at start and at every reload): only
// its servers, its mode, retrieve limit and noa switch, and only this
// profile kept (the others may name servers that are gone). A config
// without the profile is left as it is; checkProfile then refuses it.
func (p *stdioProfile) narrow(c *config.Config) {
	pc, ok := c.Profiles[p.name]
	if !ok {
		return
	}
	m := profile.New(p.name, pc)
	p.matcher.Store(m)
	for name := range c.MCPServers {
		if !m.Server(name) {
			delete(c.MCPServers, name)
		}
	}
	for name := range c.Broken {
		if !m.Server(name) {
			delete(c.Broken, name)
		}
	}
	if pc.Mode != "" {
		c.Mode = pc.Mode
	}
	if pc.RetrieveLimit != 0 {
		c.RetrieveLimit = pc.RetrieveLimit
	}
	if pc.Noa != nil {
		c.Noa.Enabled = pc.Noa
	}
	c.Profiles = map[string]config.ProfileConfig{p.name: pc}
}

// checkProfile says why c cannot serve the profile, or nil.
func (p *stdioProfile) check(c *config.Config) error {
	if _, ok := c.Profiles[p.name]; ok {
		return nil
	}
	names := slices.Sorted(maps.Keys(c.Profiles))
	if len(names) == 0 {
		return fmt.Errorf("--profile %s: the config has no profiles; add one under \"profiles\" (README, Profiles and client tokens)", p.name)
	}
	return fmt.Errorf("--profile %s: no such profile in the config (its profiles: %s)", p.name, strings.Join(names, ", "))
}

// toolFilter is the upstream.Options.ToolFilter of the profile.
func (p *stdioProfile) toolFilter(server string, t mcp.Tool) bool {
	return p.matcher.Load().Tool(server, t.Name, t.Annotations)
}
