package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/clientauth"
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
	// Token names the client token the call's request carried
	// (internal/clientauth: its name, never its value), "" for none; Admin
	// is true for the admin auth_token. Both are zero over stdio and
	// without a configured credential.
	Token        string
	Admin        bool
	Server, Tool string
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

// maxClients bounds the session → client map: a streamable HTTP session
// that is never deleted would otherwise stay in it forever.
const maxClients = 4096

// caller is who a client session is: the name its client gave in
// initialize and the identity its initialize came with (clientauth).
type caller struct {
	name string
	id   clientauth.Identity
}

// clientNames maps client session ids to their callers.
type clientNames struct {
	mu    sync.Mutex
	names map[string]caller
}

func (c *clientNames) set(id string, who caller) {
	if id == "" || who == (caller{}) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names == nil {
		c.names = map[string]caller{}
	}
	if _, ok := c.names[id]; !ok && len(c.names) >= maxClients {
		for k := range c.names { // any one: the map only names sessions
			delete(c.names, k)
			break
		}
	}
	c.names[id] = who
}

func (c *clientNames) get(id string) caller {
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
		id, _ := clientauth.FromContext(ctx)
		s.clients.set(sessionIDFor(mcpserver.ClientSessionFromContext(ctx), s.opts.StdioSessionID), caller{name: req.Params.ClientInfo.Name, id: id})
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		s.clients.drop(sessionIDFor(cs, s.opts.StdioSessionID))
	})
}

// ClientName is the name the client of session id gave in initialize, ""
// when it is unknown.
func (s *Server) ClientName(id string) string { return s.clients.get(id).name }

// ClientToken names the credential session id's initialize came with: the
// client token's name, "(admin)" for auth_token, "" when unknown or none
// (stdio, no credential configured).
func (s *Server) ClientToken(id string) string {
	who := s.clients.get(id).id
	if who.Token == "" && !who.Admin {
		return ""
	}
	return who.Label()
}

// observe hands one finished upstream call to Deps.OnCall.
// res and err are what the client gets, rawErr what the manager returned.
func (s *Server) observe(ctx context.Context, start time.Time, server, tool string, args map[string]any, argsJSON json.RawMessage, res *mcp.CallToolResult, err, rawErr error) {
	if s.onCall == nil {
		return
	}
	cs := mcpserver.ClientSessionFromContext(ctx)
	id := sessionIDFor(cs, s.opts.StdioSessionID)
	who := s.clients.get(id)
	c := Call{Time: start, Session: id, Client: who.name, Server: server, Tool: tool, Known: true,
		Duration: time.Since(start), Arguments: args, ArgumentsJSON: argsJSON}
	// The call's own request says who sent it; a session's initialize is
	// the fallback (a request whose context does not reach here).
	ident, ok := clientauth.FromContext(ctx)
	if !ok {
		ident = who.id
	}
	c.Token, c.Admin = ident.Token, ident.Admin
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
