// Package profile owns the decision of what one profile includes: which
// upstream tools, prompts and resources its clients see and may call. It
// is pure (no I/O, clock or network): the front asks it about each item
// it would list or call, and hides what it refuses ("not found", with no
// hint that the item exists). The profiles themselves are configured in
// internal/config (ProfileConfig); the default profile, the zero Matcher,
// includes everything.
package profile

import (
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Matcher answers what one profile includes. The zero value (and a nil
// *Matcher) is the default profile: everything.
type Matcher struct {
	name    string
	all     bool
	servers map[string]bool // whole servers
	tools   map[string][]string
	require []hint
}

type hint struct {
	name string
	want bool
}

// New builds the matcher of the profile called name. The config must have
// been validated (config.Validate); a malformed pattern matches nothing.
func New(name string, p config.ProfileConfig) *Matcher {
	m := &Matcher{name: name, servers: map[string]bool{}, tools: map[string][]string{}}
	for _, s := range p.Servers {
		m.servers[s] = true
	}
	for _, t := range p.Tools {
		if server, tool, ok := config.SplitToolID(t); ok {
			m.tools[server] = append(m.tools[server], tool)
		}
	}
	for _, a := range p.Annotations {
		h, neg := strings.CutPrefix(a, "!")
		m.require = append(m.require, hint{name: h, want: !neg})
	}
	m.all = len(p.Servers) == 0 && len(p.Tools) == 0
	return m
}

// Name is the profile's name; "" for the default profile.
func (m *Matcher) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Everything reports whether the matcher includes every item (the default
// profile), so a caller may skip asking.
func (m *Matcher) Everything() bool {
	return m == nil || m.all && len(m.require) == 0
}

// Tool reports whether the profile includes the tool of server called
// tool, whose annotations are ann.
func (m *Matcher) Tool(server, tool string, ann mcp.ToolAnnotation) bool {
	if m.Everything() {
		return true
	}
	if !m.all && !m.servers[server] && !slices.ContainsFunc(m.tools[server], func(p string) bool {
		ok, err := path.Match(p, tool)
		return ok && err == nil
	}) {
		return false
	}
	for _, h := range m.require {
		if hintValue(ann, h.name) != h.want {
			return false
		}
	}
	return true
}

// Server reports whether the profile includes server's prompts and
// resources: a profile that names the server, whole or by some of its
// tools, includes them; one that selects only by annotations includes
// every server's.
func (m *Matcher) Server(server string) bool {
	if m == nil || m.all {
		return true
	}
	return m.servers[server] || len(m.tools[server]) > 0
}

// hintValue is the annotation's value, false when absent. The MCP
// defaults for an absent destructiveHint and openWorldHint are true, but a
// profile selecting on them means what the server declared: a tool that
// does not say it is read-only is not taken as read-only, and one that
// does not say it is destructive is not taken as safe by "!destructiveHint"
// unless readOnlyHint says so.
func hintValue(a mcp.ToolAnnotation, name string) bool {
	var v *bool
	switch name {
	case "readOnlyHint":
		v = a.ReadOnlyHint
	case "destructiveHint":
		v = a.DestructiveHint
		if v == nil {
			// MCP: destructiveHint is meaningful only when readOnlyHint is
			// false, and defaults to true.
			return a.ReadOnlyHint == nil || !*a.ReadOnlyHint
		}
	case "idempotentHint":
		v = a.IdempotentHint
	case "openWorldHint":
		v = a.OpenWorldHint
		if v == nil {
			return true // MCP default
		}
	}
	return v != nil && *v
}
