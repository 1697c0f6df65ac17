package server

import (
	"cmp"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// What Exposed lists.
const (
	KindTools     = "tools"
	KindPrompts   = "prompts"
	KindResources = "resources"
)

// Exposed is one thing the front offers a client, under the name the client
// sees: a tool (its direct-mode name, or in retrieve mode the id call_tool
// takes), a prompt (with its server's prefix), a resource URI or a resource
// template.
type Exposed struct {
	Server string
	// Name is what the client uses: tool name or id, prompt name, resource
	// URI or URI template.
	Name string
	// Template marks a resource template among resources.
	Template    bool
	Description string
}

// Exposed lists what the front offers of kind (KindTools, KindPrompts or
// KindResources), sorted by server then name. Names withheld for a
// collision are not listed.
func (s *Server) Exposed(kind string) []Exposed {
	var out []Exposed
	switch kind {
	case KindTools:
		s.mu.RLock()
		if s.opts.Mode == config.ModeDirect {
			for name, id := range s.directIDs {
				t := s.byID[id]
				out = append(out, Exposed{Server: t.Server, Name: name, Description: t.Description})
			}
		} else {
			for id, t := range s.byID {
				out = append(out, Exposed{Server: t.Server, Name: id, Description: t.Description})
			}
		}
		s.mu.RUnlock()
	case KindPrompts, KindResources:
		c := s.catalog
		if c == nil {
			return nil
		}
		c.mu.RLock()
		if kind == KindPrompts {
			for name, r := range c.prompts {
				out = append(out, Exposed{Server: r.server, Name: name, Description: c.promptDescription(r)})
			}
		} else {
			for uri, server := range c.uris {
				out = append(out, Exposed{Server: server, Name: uri, Description: c.resourceDescription(server, uri)})
			}
			for _, t := range c.tmpls {
				out = append(out, Exposed{Server: t.server, Name: templateKey(t.tmpl), Template: true, Description: t.tmpl.Description})
			}
		}
		c.mu.RUnlock()
	}
	slices.SortFunc(out, func(a, b Exposed) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name))
	})
	return out
}

// promptDescription is the upstream's description of a prompt. c.mu must
// be held.
func (c *catalogFront) promptDescription(r promptRoute) string {
	if cat := c.catalogs[r.server]; cat != nil {
		for _, p := range cat.Prompts {
			if p.Name == r.name {
				return p.Description
			}
		}
	}
	return ""
}

// resourceDescription is the upstream's description (or name) of a
// resource. c.mu must be held.
func (c *catalogFront) resourceDescription(server, uri string) string {
	if s, orig, ok := splitRewritten(uri); ok && s == server {
		uri = orig
	}
	if cat := c.catalogs[server]; cat != nil {
		for _, r := range cat.Resources {
			if r.URI == uri {
				return cmp.Or(r.Description, r.Name)
			}
		}
	}
	return ""
}
