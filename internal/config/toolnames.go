package config

import "strings"

// ownToolNames rewrites the "server:tool" entries of allowed_tools and
// disabled_tools that name this server as plain "tool" (issue 18: both
// forms are accepted, since retrieve_tools shows ids as server:tool). An
// entry naming another server is kept as written, so it matches nothing
// and is warned about when the tools are listed. It reports whether
// anything changed; the slices are replaced, never modified.
func (s *ServerConfig) ownToolNames(server string) bool {
	changed := false
	for _, list := range []*[]string{&s.AllowedTools, &s.DisabledTools} {
		var out []string
		for i, n := range *list {
			if tool, ok := strings.CutPrefix(n, server+":"); ok && tool != "" {
				if out == nil {
					out = append([]string(nil), (*list)...)
				}
				out[i] = tool
			}
		}
		if out != nil {
			*list, changed = out, true
		}
	}
	return changed
}
