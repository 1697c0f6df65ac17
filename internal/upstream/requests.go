package upstream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Peer is the front client on whose behalf a call runs. What an upstream
// sends while serving the call (progress, log messages, and its own
// requests: sampling, elicitation, roots) is handed to the peer of that
// call, so it reaches the client session that made it. Attach one to a
// call's context with WithPeer.
//
// One connection per upstream serves every front session, so a request the
// upstream sends is matched to a call in this order: the call whose HTTP
// response stream carried it (streamable HTTP sends a call's requests on
// that call's own stream); else the only call in flight on the connection;
// else, when every call in flight belongs to one front session, that
// session. Anything else has no client to ask and is answered with an
// error saying so. A roots/list with no call in flight is answered by the
// session whose roots the server holds (roots.go).
type Peer interface {
	// Session identifies the front client session ("" when it has none).
	Session() string
	// WantsProgress reports whether the client asked for progress on this
	// call (it sent _meta.progressToken); only then does the upstream get a
	// token of its own.
	WantsProgress() bool
	// Progress relays one notifications/progress of the call. params are
	// the upstream's, without its progressToken; the peer adds the
	// client's own.
	Progress(params map[string]any)
	// Log relays a notifications/message the upstream sent while the call
	// was in flight.
	Log(server string, n mcp.LoggingMessageNotification)
	// CreateMessage, Elicit and ListRoots answer the upstream's requests
	// made while serving the call. An error goes back to the upstream as
	// its JSON-RPC error; it should say why (the client declared no such
	// capability, or went away).
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

type peerKey struct{}

// WithPeer returns ctx carrying p: Manager.Call relays what the upstream
// sends during the call to p.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

func peerFrom(ctx context.Context) Peer {
	p, _ := ctx.Value(peerKey{}).(Peer)
	return p
}

// SessionPeer is implemented by a Peer that can stand for its whole client
// session. When a request is matched to a session with several calls in
// flight (not to one call), the peer's Detached is asked instead, so the
// request does not fail when the call it was credited to ends first.
type SessionPeer interface {
	Detached() Peer
}

// ErrNoPeer is what an upstream request gets when no client can be asked:
// no call is in flight on the connection, or several front sessions have
// calls in flight and the request names none of them.
var ErrNoPeer = errors.New("no client to ask")

// inflight is one call in flight on a session, with the peer it runs for.
type inflight struct {
	peer  Peer
	token string // our progress token for it ("" when the client wants none)
	key   owner  // whose roots the call needs (roots.go)
	// admitted is closed when a queued call gets its turn (roots.go);
	// resync says it must first make the server take its roots.
	admitted chan struct{}
	resync   bool
	// quiet: a request other than tools/call (prompts/get, resources/read,
	// completion/complete). It runs for its client's session, under its
	// roots, but what the server asks during it is not relayed: mcproxy
	// relays requests only during tool calls.
	quiet bool
}

type inflightKey struct{}

// calls tracks a session's calls in flight, and the roots the server
// holds (roots.go). Its zero value is ready.
type calls struct {
	mu      sync.Mutex
	set     map[*inflight]struct{}
	byToken map[string]*inflight
	next    int64
	roots   rootsState
}

// begin registers a call for p and returns it with the context the
// upstream request must be sent under (so that requests arriving on the
// call's own stream find it). end must be called when the call returns.
// gated (a 2025-11-25 connection) makes a call to a server that asked for
// roots wait for its turn (roots.go); the error is ctx's when it ends
// first, and then there is nothing to end.
func (c *calls) begin(ctx context.Context, server string, p Peer, gated, quiet bool) (*inflight, context.Context, error) {
	c.mu.Lock()
	in := &inflight{peer: p, quiet: quiet}
	in.key = keyOf(p, in)
	if p.WantsProgress() {
		c.next++
		in.token = "mcproxy-" + server + "-" + strconv.FormatInt(c.next, 10)
	}
	cctx := context.WithValue(ctx, inflightKey{}, in)
	if !gated || !c.roots.asked {
		c.registerLocked(in)
		c.mu.Unlock()
		return in, cctx, nil
	}
	if len(c.roots.queue) == 0 {
		if ok, resync := c.admissibleLocked(in.key); ok {
			c.registerLocked(in)
			resync = resync && c.syncsLocked(in)
			in.resync = resync
			c.roots.syncing = resync
			c.mu.Unlock()
			return in, cctx, nil
		}
	} else if ok, resync := c.admissibleLocked(in.key); ok && !resync && c.runningLocked(in.key) {
		// The session's calls are running with its roots: another of
		// them joins at once (waiting behind a queued call of another
		// session could deadlock on a call this one serves).
		c.registerLocked(in)
		c.mu.Unlock()
		return in, cctx, nil
	}
	in.admitted = make(chan struct{})
	c.roots.queue = append(c.roots.queue, in)
	c.mu.Unlock()
	if err := c.wait(ctx, in); err != nil {
		return nil, nil, err
	}
	return in, cctx, nil
}

// runningLocked reports whether a call for key is in flight.
func (c *calls) runningLocked(key owner) bool {
	for in := range c.set {
		if in.key == key {
			return true
		}
	}
	return false
}

func (c *calls) registerLocked(in *inflight) {
	if c.set == nil {
		c.set = map[*inflight]struct{}{}
		c.byToken = map[string]*inflight{}
	}
	c.set[in] = struct{}{}
	if in.token != "" {
		c.byToken[in.token] = in
	}
}

// end unregisters a call begin returned (nil: none) and lets the next in.
func (c *calls) end(in *inflight) {
	if in == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(in)
	if c.roots.owner.call == in {
		// A caller without a session is gone with its call.
		c.roots.owner, c.roots.ownerPeer, c.roots.ownerEnd = goneOwner, nil, nil
	}
	c.admitLocked()
}

func (c *calls) endLocked(in *inflight) {
	delete(c.set, in)
	if in.token != "" {
		delete(c.byToken, in.token)
	}
}

// byProgress finds the call a progress token was given to.
func (c *calls) byProgress(token any) *inflight {
	s, ok := token.(string)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byToken[s]
}

// peerFor finds the peer an upstream request or notification belongs to
// (see Peer for the order). It returns nil and says why when there is none.
func (c *calls) peerFor(ctx context.Context) (Peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, err := c.peerForLocked(ctx)
	if err != nil {
		return nil, err
	}
	return in.peer, nil
}

// peerForLocked is peerFor, as the call found (for a request matched to a
// session with several calls in flight, a stand-in for the session).
func (c *calls) peerForLocked(ctx context.Context) (*inflight, error) {
	none := fmt.Errorf("%w: mcproxy relays a server's requests only while one of its tool calls is in flight, and none is", ErrNoPeer)
	if in, ok := ctx.Value(inflightKey{}).(*inflight); ok {
		if in.quiet {
			return nil, none
		}
		return in, nil
	}
	var only *inflight
	sessions := map[string]bool{}
	for in := range c.set {
		if !in.quiet {
			only = in
		}
		sessions[in.peer.Session()] = true
	}
	switch {
	case only == nil:
		return nil, none
	case len(c.set) == 1:
		return only, nil
	case len(sessions) == 1 && !sessions[""]:
		if sp, ok := only.peer.(SessionPeer); ok {
			return &inflight{peer: sp.Detached(), key: only.key}, nil
		}
		return only, nil
	}
	return nil, fmt.Errorf("%w: %d tool calls from %d client sessions are in flight and the request does not say which one it belongs to; send it on the call's own response stream (streamable HTTP)",
		ErrNoPeer, len(c.set), len(sessions))
}

// relayNotification passes an upstream notification that belongs to a
// call to that call's peer: progress by its token, log messages to the
// caller that caused them (or, when that cannot be told, to the manager's
// OnLog for every session). It reports whether it handled n.
func (s *session) relayNotification(server string, onLog func(string, mcp.LoggingMessageNotification), log *zap.Logger, n mcp.JSONRPCNotification) bool {
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		fields := n.Params.AdditionalFields
		in := s.calls.byProgress(fields["progressToken"])
		if in == nil {
			log.Debug("progress for no call in flight; dropped", zap.Any("token", fields["progressToken"]))
			return true
		}
		params := make(map[string]any, len(fields))
		for k, v := range fields {
			if k != "progressToken" {
				params[k] = v
			}
		}
		in.peer.Progress(params)
		return true
	case string(mcp.MethodNotificationMessage):
		msg, err := loggingMessage(n)
		if err != nil {
			log.Debug("malformed notifications/message; dropped", zap.Error(err))
			return true
		}
		if p, err := s.calls.peerFor(context.Background()); err == nil {
			p.Log(server, msg)
			return true
		}
		if onLog != nil {
			onLog(server, msg)
		}
		return true
	}
	return false
}

// loggingMessage decodes a notifications/message.
func loggingMessage(n mcp.JSONRPCNotification) (mcp.LoggingMessageNotification, error) {
	f := n.Params.AdditionalFields
	var m mcp.LoggingMessageNotification
	m.Method = n.Method
	level, _ := f["level"].(string)
	if level == "" {
		return m, errors.New("no level")
	}
	m.Params.Level = mcp.LoggingLevel(level)
	m.Params.Logger, _ = f["logger"].(string)
	m.Params.Data = f["data"]
	return m, nil
}

// relayHandlers answers an upstream's sampling, elicitation and roots
// requests through the peer of the call they belong to.
type relayHandlers struct {
	s      *session
	server string
}

func (h relayHandlers) peer(ctx context.Context, what string) (Peer, error) {
	p, err := h.s.calls.peerFor(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s from %q: %w", what, h.server, err)
	}
	return p, nil
}

func (h relayHandlers) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	p, err := h.peer(ctx, "sampling/createMessage")
	if err != nil {
		return nil, err
	}
	return p.CreateMessage(ctx, req)
}

func (h relayHandlers) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p, err := h.peer(ctx, "elicitation/create")
	if err != nil {
		return nil, err
	}
	return p.Elicit(ctx, req)
}

func (h relayHandlers) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if !h.s.modern.Load() {
		return h.listRoots(ctx, req)
	}
	// 2026-07-28 asks with the request that needs the roots: its caller answers.
	p, err := h.peer(ctx, "roots/list")
	if err != nil {
		return nil, err
	}
	return p.ListRoots(ctx, req)
}

// relayOptions declare sampling, elicitation (form and URL) and roots to
// the upstream and route its requests through relayHandlers. The
// connection is shared by every front session and opened before any
// client arrives, so they are declared whenever a client might answer;
// a request whose caller did not declare the capability gets an error
// naming it (the front's Peer says so).
func (s *session) relayOptions(server string) []client.ClientOption {
	h := relayHandlers{s: s, server: server}
	s.handlers = h
	return []client.ClientOption{
		client.WithSamplingHandler(h),
		client.WithElicitationHandler(h),
		client.WithRootsHandler(h),
		client.WithClientCapabilities(mcp.ClientCapabilities{
			Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
		}),
	}
}

// levelOrder ranks the MCP logging levels, most verbose first.
var levelOrder = []mcp.LoggingLevel{
	mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
	mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency,
}

// ValidLevel reports whether l is an MCP logging level.
func ValidLevel(l mcp.LoggingLevel) bool {
	for _, x := range levelOrder {
		if x == l {
			return true
		}
	}
	return false
}

// SetLogLevel sends logging/setLevel to every ready upstream that offers
// logging, and remembers level for those that connect later. An upstream
// without the logging capability is skipped. Errors of the others are
// joined, each naming its server.
func (m *Manager) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if !ValidLevel(level) {
		var names []string
		for _, l := range levelOrder {
			names = append(names, string(l))
		}
		return fmt.Errorf("logging level %q: want one of %s", level, strings.Join(names, ", "))
	}
	m.logMu.Lock()
	m.logLevel = level
	m.logMu.Unlock()
	var errs []error
	for l, s := range m.ready() {
		if err := s.setLevel(ctx, level); err != nil {
			errs = append(errs, fmt.Errorf("setting the log level of %q: %w", l.name, err))
		}
	}
	return errors.Join(errs...)
}

// applyLogLevel sends the remembered level to a session that just came up.
func (l *link) applyLogLevel(ctx context.Context, s *session) {
	l.m.logMu.Lock()
	level := l.m.logLevel
	l.m.logMu.Unlock()
	if level == "" {
		return
	}
	if err := s.setLevel(ctx, level); err != nil {
		l.log.Warn("setting the log level after connecting", zap.String("level", string(level)), zap.Error(err))
	}
}

// RootsChanged tells the ready upstreams that the client's roots changed
// (notifications/roots/list_changed); they ask again with roots/list.
// When ctx carries the client's Peer (WithPeer), only the upstreams that
// hold that session's roots are told: the others hold another session's
// and are told when this one next calls them (roots.go). Without one,
// every upstream is.
func (m *Manager) RootsChanged(ctx context.Context) {
	p := peerFrom(ctx)
	for l, s := range m.ready() {
		if s.modern.Load() {
			continue // 2026-07-28 asks for roots with each request that needs them
		}
		if p != nil && !s.calls.changed(p.Session()) {
			continue
		}
		if err := s.client.RootListChanges(ctx); err != nil {
			l.log.Debug("forwarding roots/list_changed", zap.Error(err))
		}
	}
}

// ready yields every ready server's link and live session, by name.
func (m *Manager) ready() iter.Seq2[*link, *session] {
	return func(yield func(*link, *session) bool) {
		for _, name := range m.names {
			l := m.links[name]
			l.mu.Lock()
			s := l.sess
			ok := l.state == StateReady && s != nil
			l.mu.Unlock()
			if ok && !yield(l, s) {
				return
			}
		}
	}
}
