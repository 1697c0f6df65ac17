package server

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
)

// The hooks below feed the Learner (Deps.Learner) with a session's search
// episode: what it searched and was shown, what it described, and whether
// the call that followed succeeded. A request without a session (the
// stateless 2026-07-28 protocol) has no episode to follow and teaches
// nothing.

func (s *Server) learnSession(ctx context.Context) string {
	if s.learn == nil {
		return ""
	}
	return s.learnID(ctx)
}

func (s *Server) learnSearch(ctx context.Context, query string, matches []Match) {
	if sid := s.learnSession(ctx); sid != "" {
		ids := make([]string, len(matches))
		for i, m := range matches {
			ids[i] = m.Tool.ID
		}
		s.learn.Searched(sid, query, ids)
	}
}

func (s *Server) learnDescribe(ctx context.Context, id string) {
	if sid := s.learnSession(ctx); sid != "" {
		s.learn.Described(sid, id)
	}
}

// learnCall hands a lesson to the Learner's worker: saving it and
// re-indexing the tool's server is not the call's to wait for (the next
// retrieve_tools waits for it instead, in Learner.Refresh).
func (s *Server) learnCall(ctx context.Context, id string, res *mcp.CallToolResult, err error) {
	if sid := s.learnSession(ctx); sid != "" {
		s.learn.CalledLater(sid, id, err == nil && res != nil && !res.IsError)
	}
}
