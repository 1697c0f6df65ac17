package server

import (
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/passthrough"
)

// What Exposed lists.
const (
	KindTools     = "tools"
	KindPrompts   = "prompts"
	KindResources = "resources"
)

// Exposed is one thing the front offers a client under the name the client
// sees (passthrough.Exposed, whose prompts and resources the passthrough
// lists).
type Exposed = passthrough.Exposed

// Exposed lists what the front offers of kind (KindTools, KindPrompts or
// KindResources), sorted by server then name. Names withheld for a
// collision are not listed.
func (s *Server) Exposed(kind string) []Exposed {
	switch kind {
	case KindPrompts:
		return s.pass.Prompts()
	case KindResources:
		return s.pass.Resources()
	case KindTools:
	default:
		return nil
	}
	var out []Exposed
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
	passthrough.SortExposed(out)
	return out
}
