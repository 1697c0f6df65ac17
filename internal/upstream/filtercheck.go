package upstream

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/fuzzy"
)

// UnmatchedToolNames lists the allowed_tools and disabled_tools entries of
// a server that name none of its tools, each with the closest tool name
// when one is near: "allowed_tools: \"read_graf\" (did you mean
// \"read_graph\"?)". A typo there would otherwise hide every tool
// silently (issue 18).
func UnmatchedToolNames(server string, allowed, disabled []string, tools []string) []string {
	have := make(map[string]bool, len(tools))
	for _, t := range tools {
		have[t] = true
	}
	sorted := append([]string(nil), tools...)
	sort.Strings(sorted)
	var out []string
	for _, f := range []struct {
		key   string
		names []string
	}{{"allowed_tools", allowed}, {"disabled_tools", disabled}} {
		for _, n := range f.names {
			if have[n] {
				continue
			}
			msg := fmt.Sprintf("mcpServers.%s.%s: %q matches no tool of %s", server, f.key, n, server)
			if other, _, ok := strings.Cut(n, ":"); ok && other != server {
				msg += fmt.Sprintf(" (it names server %q; list it under that server)", other)
			} else if best := closest(n, sorted); best != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", best)
			}
			out = append(out, msg)
		}
	}
	return out
}

// closest is the tool name nearest to n when it is near enough to be a
// plausible typo, else "".
func closest(n string, names []string) string {
	best, bestDist := "", 1<<30
	for _, t := range names {
		if d := fuzzy.Distance(strings.ToLower(n), strings.ToLower(t)); d < bestDist {
			best, bestDist = t, d
		}
	}
	if bestDist > max(2, len(n)/3) {
		return ""
	}
	return best
}

// checkFilters warns about filter entries that match none of the tools
// the server listed; it runs on every listing (start-up and refresh).
func (l *link) checkFilters(tools []mcp.Tool) {
	if len(l.cfg.AllowedTools) == 0 && len(l.cfg.DisabledTools) == 0 {
		return
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	for _, msg := range UnmatchedToolNames(l.name, l.cfg.AllowedTools, l.cfg.DisabledTools, names) {
		l.log.Warn("tool filter matches nothing", zap.String("problem", msg))
	}
}
