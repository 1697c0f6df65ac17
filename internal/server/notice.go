package server

import (
	"context"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Config notices (issue 30): a user who reaches mcproxy only through an MCP
// client over stdio has no dashboard and no status command in view, so a
// refused change to the config file (mcproxy goes on with the previous
// config) would go unseen. While there is one, Options.ConfigNotice's line
// is added where the model reads it and can tell the user: every
// retrieve_tools answer (retrieve mode), and in direct mode, whose
// tools/list the model reads once and a client may cache, the first tool
// answer each client session gets after the notice appears (a new notice
// is shown again). It goes away once the file is fixed.

// noticeLine is Options.ConfigNotice's line now, "" for none.
func (s *Server) noticeLine() string {
	if s.opts.ConfigNotice == nil {
		return ""
	}
	return s.opts.ConfigNotice()
}

// noticesShown remembers which client sessions were given the current
// notice in direct mode.
type noticesShown struct {
	mu   sync.Mutex
	line string
	// sessions that were given line; emptied when the line changes, so it
	// holds at most the sessions that called a tool since.
	sessions map[string]bool
}

// withNotice adds the notice to a direct-mode tool answer, the first one
// the calling session gets since the notice appeared. res is not changed.
func (s *Server) withNotice(ctx context.Context, res *mcp.CallToolResult) *mcp.CallToolResult {
	line := s.noticeLine()
	if line == "" || res == nil {
		return res
	}
	id := ""
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		id = cs.SessionID()
	}
	n := &s.notices
	n.mu.Lock()
	if n.line != line {
		n.line, n.sessions = line, map[string]bool{}
	}
	seen := n.sessions[id]
	n.sessions[id] = true
	n.mu.Unlock()
	if seen {
		return res
	}
	out := *res
	out.Content = append(slices.Clone(res.Content), mcp.NewTextContent(line))
	return &out
}
