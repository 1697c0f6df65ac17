package config

import "sort"

// PrefixSeparator joins a server name to a name it defines in the default
// prefix ("server__tool").
const PrefixSeparator = "__"

// NamePrefix is what goes in front of the names server defines (direct-mode
// tools, prompts): the configured prefix, or server + "__" when none is set.
func (s ServerConfig) NamePrefix(server string) string {
	if s.Prefix != nil {
		return *s.Prefix
	}
	return server + PrefixSeparator
}

// validatePrefixes reports servers that share one non-empty prefix: all
// their names would live in one namespace, so the prefix separates nothing.
// Servers with prefix "" are checked name by name when their lists arrive,
// since only then is it known whether they collide.
func (c *Config) validatePrefixes() []error {
	names := make([]string, 0, len(c.MCPServers))
	for name := range c.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	owner := map[string]string{}
	var errs []error
	for _, name := range names {
		sc := c.MCPServers[name]
		if !sc.IsEnabled() {
			continue
		}
		p := sc.NamePrefix(name)
		if p == "" {
			continue
		}
		if other, ok := owner[p]; ok {
			errs = append(errs, fieldErr("mcpServers."+name+".prefix",
				"%q is also the prefix of server %q: the names of %q and %q would collide; give one of them another prefix",
				p, other, other, name))
			continue
		}
		owner[p] = name
	}
	return errs
}
