package passthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// readListed serves resources/read of a URI some server listed.
func (c *catalogFront) readListed(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return c.read(ctx, req.Params.URI)
}

// readTemplated serves resources/read of any other URI (mcp-go matched it
// against a template or the catch-all).
func (c *catalogFront) readTemplated(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return c.read(ctx, req.Params.URI)
}

// read asks the server that owns uri for it (under the URI it sent, when
// the front rewrote it: urirewrite.go).
func (c *catalogFront) read(ctx context.Context, uri string) ([]mcp.ResourceContents, error) {
	server, orig, ok := c.resolve(uri)
	if !ok {
		return nil, fmt.Errorf("no server offers resource %q: read a URI from resources/list, a template of resources/templates/list, or a tool result: %w",
			uri, mcpserver.ErrResourceNotFound)
	}
	res, err := c.up.ReadResource(c.forClient(ctx), server, orig)
	if err != nil {
		var re *upstream.RPCError
		if errors.As(err, &re) && re.Code == mcp.RESOURCE_NOT_FOUND {
			return nil, fmt.Errorf("reading %q from %q: %w (%s)", orig, server, mcpserver.ErrResourceNotFound, re.Message)
		}
		return nil, fmt.Errorf("reading %q from %q: %w", orig, server, err)
	}
	out := make([]mcp.ResourceContents, len(res.Contents))
	for i, rc := range res.Contents {
		out[i], _ = c.exposeContents(server, rc, uri)
	}
	return out, nil
}

// owner finds the server that answers for uri: the one that listed it, else
// the first whose template matches it, else the one whose tool returned it.
func (c *catalogFront) owner(uri string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if s, ok := c.claimantLocked(uri); ok {
		return s, true
	}
	if s, ok := c.linked[uri]; ok {
		if _, up := c.catalogs[s]; up {
			return s, true
		}
	}
	// A lone server with resources is the only one that can own it.
	var only string
	for name, cat := range c.catalogs {
		if cat.Capabilities.Resources == nil {
			continue
		}
		if only != "" {
			return "", false
		}
		only = name
	}
	return only, only != ""
}

// noteLinks remembers the resource URIs a server's tool result points at.
func (c *catalogFront) noteLinks(server string, res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	var uris []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case mcp.ResourceLink:
			uris = append(uris, v.URI)
		case *mcp.ResourceLink:
			uris = append(uris, v.URI)
		case mcp.EmbeddedResource:
			uris = append(uris, resourceURI(v.Resource))
		case *mcp.EmbeddedResource:
			uris = append(uris, resourceURI(v.Resource))
		}
	}
	if len(uris) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range uris {
		if u == "" {
			continue
		}
		if len(c.linked) >= maxLinked {
			clear(c.linked) // a bounded memo, not a registry
		}
		c.linked[u] = server
	}
}

// maxLinked bounds the memo of URIs seen in tool results.
const maxLinked = 10000

func resourceURI(rc mcp.ResourceContents) string {
	switch v := rc.(type) {
	case mcp.TextResourceContents:
		return v.URI
	case *mcp.TextResourceContents:
		return v.URI
	case mcp.BlobResourceContents:
		return v.URI
	case *mcp.BlobResourceContents:
		return v.URI
	}
	return ""
}

// subscriptions tracks which client sessions subscribed to which resource
// on which server, so that an upstream's notifications/resources/updated
// reaches the subscribed sessions only, and the upstream subscription is
// held while at least one session wants it.
type subscriptions struct {
	mu sync.Mutex
	// byURI: server → uri (the server's own) → session id → the URI the
	// session subscribed to (the same, or as the front rewrote it).
	byURI map[string]map[string]map[string]string
}

func newSubscriptions() *subscriptions {
	return &subscriptions{byURI: map[string]map[string]map[string]string{}}
}

// add records the session's subscription to uri on server, which it knows
// as exposed, and reports whether it is the first for (server, uri).
func (s *subscriptions) add(server, uri, session, exposed string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byURI[server] == nil {
		s.byURI[server] = map[string]map[string]string{}
	}
	sessions := s.byURI[server][uri]
	if sessions == nil {
		sessions = map[string]string{}
		s.byURI[server][uri] = sessions
	}
	first := len(sessions) == 0
	sessions[session] = exposed
	return first
}

// remove drops the session's subscription and reports whether it was the
// last for (server, uri).
func (s *subscriptions) remove(server, uri, session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sessions := s.byURI[server][uri]
	if _, ok := sessions[session]; !ok {
		return false
	}
	delete(sessions, session)
	if len(sessions) > 0 {
		return false
	}
	delete(s.byURI[server], uri)
	return true
}

type serverURI struct{ server, uri string }

// dropSession removes every subscription of a session and returns those it
// was the last subscriber of.
func (s *subscriptions) dropSession(session string) []serverURI {
	s.mu.Lock()
	defer s.mu.Unlock()
	var last []serverURI
	for server, byURI := range s.byURI {
		for uri, sessions := range byURI {
			if _, ok := sessions[session]; !ok {
				continue
			}
			delete(sessions, session)
			if len(sessions) == 0 {
				delete(byURI, uri)
				last = append(last, serverURI{server, uri})
			}
		}
	}
	return last
}

// subscriber is one session subscribed to a resource, with the URI it
// knows the resource by.
type subscriber struct{ session, uri string }

// sessions returns who subscribed to uri on server, sorted by session.
func (s *subscriptions) sessions(server, uri string) []subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []subscriber
	for id, exposed := range s.byURI[server][uri] {
		out = append(out, subscriber{id, exposed})
	}
	slices.SortFunc(out, func(a, b subscriber) int { return strings.Compare(a.session, b.session) })
	return out
}

// subscribing runs before mcp-go handles any request; for a
// resources/subscribe it subscribes the owning upstream when this is the
// first session to ask, and refuses the request, saying why, when no server
// offers the URI or the upstream refuses. (mcp-go's own handler only
// acknowledges; its after-hooks cannot fail a request.)
func (c *catalogFront) subscribing(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	// Every request passes here; only a subscribe is decoded.
	if !ok || !bytes.Contains(raw, []byte(mcp.MethodResourcesSubscribe)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodResourcesSubscribe) || req.Params.URI == "" {
		return nil
	}
	uri := req.Params.URI
	select {
	case <-c.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	server, orig, session, ok := c.subscriber(ctx, uri)
	if !ok {
		return fmt.Errorf("no server offers resource %q: subscribe to a URI from resources/list, a resource template or a tool result", uri)
	}
	if !c.subs.add(server, orig, session, uri) {
		return nil
	}
	if err := c.up.Subscribe(ctx, server, orig); err != nil {
		c.subs.remove(server, orig, session)
		return fmt.Errorf("subscribing to %q on %q: %w", orig, server, err)
	}
	return nil
}

// subscriber is the server that owns uri, the URI to ask it for, and the
// client session asking.
func (c *catalogFront) subscriber(ctx context.Context, uri string) (server, orig, session string, ok bool) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return "", "", "", false
	}
	server, orig, ok = c.resolve(uri)
	return server, orig, cs.SessionID(), ok
}

// unsubscribed runs after a resources/unsubscribe: the upstream is
// unsubscribed when no session wants the resource any more.
func (c *catalogFront) unsubscribed(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
	if req == nil {
		return
	}
	server, orig, session, ok := c.subscriber(ctx, req.Params.URI)
	if ok && c.subs.remove(server, orig, session) {
		c.unsubscribeUpstream(ctx, server, orig)
	}
}

func (c *catalogFront) unsubscribeUpstream(ctx context.Context, server, uri string) {
	if err := c.up.Unsubscribe(ctx, server, uri); err != nil {
		c.log.Debug("unsubscribing upstream", zap.String("upstream", server), zap.String("uri", uri), zap.Error(err))
	}
}

// sessionGone ends the subscriptions of a client session that left.
func (c *catalogFront) sessionGone(ctx context.Context, cs mcpserver.ClientSession) {
	for _, su := range c.subs.dropSession(cs.SessionID()) {
		c.unsubscribeUpstream(context.WithoutCancel(ctx), su.server, su.uri)
	}
}

// resourceUpdated relays an upstream's notifications/resources/updated to
// the sessions subscribed to that resource, and to no other.
func (c *catalogFront) resourceUpdated(server, uri string) {
	for _, sub := range c.subs.sessions(server, uri) {
		if err := c.mcp.SendNotificationToSpecificClient(sub.session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": sub.uri}); err != nil {
			c.log.Debug("relaying a resource update", zap.String("session_id", sub.session), zap.String("uri", sub.uri), zap.Error(err))
		}
	}
}
