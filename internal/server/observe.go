package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Call is one tool call through the proxy, as Deps.OnCall receives it
// (issue 30: metrics, the call history, traces): one that reached the
// upstream manager, or a call_tool refused before it (arguments that are
// not an object, a held or unknown tool).
type Call struct {
	Time time.Time
	// Session is the client session's id ("" for a client without one, the
	// stateless 2026-07-28 protocol); Client is the name it gave in
	// initialize's clientInfo ("" when unknown).
	Session, Client string
	Server, Tool    string
	// Known is false when no server has the tool: the names came from the
	// model, so they are no metric labels.
	Known    bool
	Duration time.Duration
	// Error is "" for a call that succeeded; otherwise the text of the tool
	// error the client got.
	Error string
	// Arguments are the call's arguments as the client sent them, and
	// ArgumentsJSON their JSON text, the client's bytes (nil when unknown).
	// The hook must neither change nor keep them.
	Arguments     map[string]any
	ArgumentsJSON json.RawMessage
}

// maxClients bounds the session → client name map: a streamable HTTP
// session that is never deleted would otherwise stay in it forever.
const maxClients = 4096

// clientNames maps client session ids to the names their clients gave in
// initialize.
type clientNames struct {
	mu    sync.Mutex
	names map[string]string
}

func (c *clientNames) set(id, name string) {
	if id == "" || name == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]string{}
	}
	if _, ok := c.names[id]; !ok && len(c.names) >= maxClients {
		for k := range c.names { // any one: the map only names sessions
			delete(c.names, k)
			break
		}
	}
	c.names[id] = name
}

func (c *clientNames) get(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[id]
}

func (c *clientNames) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.names, id)
}

// hookClients follows initialize and session ends to keep s.clients.
func (s *Server) hookClients(h *mcpserver.Hooks) {
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		s.clients.set(sessionIDFor(mcpserver.ClientSessionFromContext(ctx), s.opts.StdioSessionID), req.Params.ClientInfo.Name)
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		s.clients.drop(sessionIDFor(cs, s.opts.StdioSessionID))
	})
}

// ClientName is the name the client of session id gave in initialize, ""
// when it is unknown.
func (s *Server) ClientName(id string) string { return s.clients.get(id) }

// observe hands one finished upstream call to Deps.OnCall.
// res and err are what the client gets, rawErr what the manager returned.
func (s *Server) observe(ctx context.Context, start time.Time, server, tool string, args map[string]any, argsJSON json.RawMessage, res *mcp.CallToolResult, err, rawErr error) {
	if s.onCall == nil {
		return
	}
	cs := mcpserver.ClientSessionFromContext(ctx)
	id := sessionIDFor(cs, s.opts.StdioSessionID)
	c := Call{Time: start, Session: id, Client: s.clients.get(id), Server: server, Tool: tool, Known: true,
		Duration: time.Since(start), Arguments: args, ArgumentsJSON: argsJSON}
	if c.Client == "" {
		if ci, ok := cs.(mcpserver.SessionWithClientInfo); ok {
			c.Client = ci.GetClientInfo().Name
		}
	}
	switch {
	case errors.Is(rawErr, upstream.ErrUnknownServer), errors.Is(rawErr, upstream.ErrUnknownTool):
		c.Known = false
	}
	switch {
	case err != nil && res == nil:
		c.Error = err.Error()
	case res != nil && res.IsError:
		c.Error = resultText(res)
		if c.Error == "" {
			c.Error = "the tool answered with an error and no text"
		}
	}
	s.onCall(c)
}
