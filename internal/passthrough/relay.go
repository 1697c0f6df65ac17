package passthrough

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// This file relays what an upstream sends while it serves a tool call to
// the client session that made the call: progress with the client's own
// token, log messages, and the upstream's sampling, elicitation and roots
// requests, whose answers go back. A client on a revision before
// 2026-07-28 is asked with server-to-client requests; a stateless
// 2026-07-28 client cannot be, so its call is answered with an
// input_required result (multi round-trip, SEP-2322) carrying the
// upstream's request, the upstream call is kept waiting, and the client's
// retry with the answer resumes it. Where the upstream speaks 2026-07-28
// too, the stateless client's call is forwarded as it came instead
// (upstream.Forward) and the upstream's own input_required result is
// the answer: nothing is kept waiting.

// Relayer is what the relay needs from the upstreams (Deps.Relayer).
// *upstream.Manager implements it; without it, log levels and roots changes
// are not forwarded.
type Relayer interface {
	// SetLogLevel applies a logging/setLevel to every upstream.
	SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error
	// RootsChanged forwards notifications/roots/list_changed; ctx carries
	// the client's upstream.Peer, so that only the upstreams holding that
	// session's roots are told (upstream.Manager.RootsChanged).
	RootsChanged(ctx context.Context)
}

// pendingTTL is how long a call parked for a stateless client's answer
// waits for the retry; past it the upstream call is cancelled.
const pendingTTL = 10 * time.Minute

// relay is the front's side of the relaying: per-session log levels and the
// calls parked for stateless clients.
type relay struct {
	mcp *mcpserver.MCPServer
	rl  Relayer // nil: log levels and roots changes stay here
	log *zap.Logger
	ttl time.Duration // how long a parked call waits for its retry (pendingTTL)

	mu       sync.Mutex
	levels   map[string]mcp.LoggingLevel // session id -> level it asked for
	sessions map[string]struct{}         // every client session registered
	ends     map[string]chan struct{}    // session id -> closed when it ends (clientPeer.Ended)
	pending  map[string]*parked          // requestState -> parked call
	// wanted and rounds are the stateless clients' side (loglevel.go).
	wanted map[*parked]mcp.LoggingLevel // per-request level of each stateless call running upstream
	rounds map[*round]struct{}          // stateless requests being answered now

	applyMu sync.Mutex       // serializes the upstream level changes
	applied mcp.LoggingLevel // the level last sent upstream ("" = none)
}

func newRelay(rl Relayer, log *zap.Logger) *relay {
	return &relay{rl: rl, log: log, ttl: pendingTTL, levels: map[string]mcp.LoggingLevel{}, sessions: map[string]struct{}{},
		ends: map[string]chan struct{}{}, pending: map[string]*parked{}, wanted: map[*parked]mcp.LoggingLevel{}, rounds: map[*round]struct{}{}}
}

// hooks wires the relay into the mcp-go server's hooks: logging/setLevel
// is applied upstream, and a session that ends is forgotten.
func (r *relay) hooks(h *mcpserver.Hooks) {
	h.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		cs := mcpserver.ClientSessionFromContext(ctx)
		if cs == nil {
			return
		}
		r.mu.Lock()
		r.levels[cs.SessionID()] = req.Params.Level
		r.mu.Unlock()
		r.upstreamLevel(ctx, true)
	})
	h.AddOnRegisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
		r.mu.Lock()
		r.sessions[cs.SessionID()] = struct{}{}
		if _, ok := r.ends[cs.SessionID()]; !ok && cs.SessionID() != "" {
			r.ends[cs.SessionID()] = make(chan struct{})
		}
		r.mu.Unlock()
	})
	h.AddOnUnregisterSession(func(ctx context.Context, cs mcpserver.ClientSession) {
		r.mu.Lock()
		delete(r.sessions, cs.SessionID())
		if end, ok := r.ends[cs.SessionID()]; ok {
			close(end)
			delete(r.ends, cs.SessionID())
		}
		_, had := r.levels[cs.SessionID()]
		delete(r.levels, cs.SessionID())
		r.mu.Unlock()
		if had {
			r.upstreamLevel(context.WithoutCancel(ctx), false)
		}
	})
}

// verboseLocked is the most verbose level any session, or any stateless
// call running upstream, asked for: the upstreams, shared by every
// session, must send at least that much; each session's own level (each
// stateless request's) is applied when a message is relayed to it.
func (r *relay) verboseLocked() mcp.LoggingLevel {
	best := mcp.LoggingLevel("")
	for _, l := range r.levels {
		best = moreVerbose(best, l)
	}
	for _, l := range r.wanted {
		best = moreVerbose(best, l)
	}
	return best
}

// moreVerbose is the more verbose of two levels ("" is none).
func moreVerbose(a, b mcp.LoggingLevel) mcp.LoggingLevel {
	// a.ShouldSendTo(b): a message at a reaches a session at b, so b is at
	// least as verbose.
	if a == "" || a.ShouldSendTo(b) {
		return b
	}
	return a
}

func (r *relay) applyLevel(ctx context.Context, level mcp.LoggingLevel) {
	if r.rl == nil || level == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.rl.SetLogLevel(ctx, level); err != nil {
		r.log.Warn("applying logging/setLevel to the upstreams", zap.String("level", string(level)), zap.Error(err))
	}
}

// rootsChanged forwards a client's notifications/roots/list_changed to
// the upstreams that hold its session's roots.
func (r *relay) rootsChanged(ctx context.Context, _ mcp.JSONRPCNotification) {
	if r.rl != nil {
		r.rl.RootsChanged(upstream.WithPeer(ctx, r.peer(ctx)))
	}
}

// peer is the client of ctx's request as the upstream manager sees it,
// with no progress token: the peer of a tool call (Passthrough.Peer) adds it,
// that of prompts/get, resources/read or completion/complete has none.
func (r *relay) peer(ctx context.Context) *clientPeer {
	p := &clientPeer{mcp: r.mcp, ctx: ctx, log: r.log}
	if cs := mcpserver.ClientSessionFromContext(ctx); cs != nil {
		p.session = cs.SessionID()
		r.mu.Lock()
		p.ended = r.ends[p.session]
		r.mu.Unlock()
	}
	p.park, _ = ctx.Value(parkKey{}).(*parked)
	p.notes, _ = ctx.Value(notesKey{}).(*atomic.Bool)
	return p
}

// serverLog relays an upstream's log message that no call can be credited
// with to every client session, each at its own level (Passthrough.ServerLog).
func (r *relay) serverLog(server string, n mcp.LoggingMessageNotification) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.sessions))
	for id := range r.sessions {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		if err := r.mcp.SendLogMessageToSpecificClient(id, n); err != nil {
			r.log.Debug("relaying an upstream log message", zap.String("upstream", server), zap.String("session_id", id), zap.Error(err))
		}
	}
	r.logToRounds(server, n)
}

type callReqKey struct{}

// middleware keeps the client's tools/call request in the context, so
// Passthrough.Peer can build the call's peer, and runs a stateless client's
// call through the multi round-trip machinery.
func (r *relay) middleware(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !mcpserver.IsModernRequest(ctx) {
			notes := new(atomic.Bool)
			ctx = context.WithValue(context.WithValue(ctx, callReqKey{}, &req), notesKey{}, notes)
			res, err := next(ctx, req)
			if notes.Load() {
				settle(ctx)
			}
			return res, err
		}
		return r.roundTrip(ctx, req, next)
	}
}

// forwarding is ctx carrying what the stateless client's request carries
// beyond its arguments, for an upstream of the same revision to get as
// sent (upstream.Forward); a 2025-11-25 upstream's call is bridged here
// instead.
func forwarding(ctx context.Context, meta *mcp.Meta, round mcp.MultiRoundTripParams) context.Context {
	return upstream.WithForward(ctx, &upstream.Forward{Meta: meta, InputResponses: round.InputResponses, RequestState: round.RequestState})
}

type notesKey struct{}

// settleLimit bounds how long a result waits for the call's notifications.
const settleLimit = 100 * time.Millisecond

// settle holds a call's result until the notifications relayed for it
// through the session's queue (deliver: only where the client request has
// no stream of its own) have left it. mcp-go hands that queue to every
// stream of the session; a progress notification taken by another stream
// could otherwise reach the client after the result, when its token is no
// longer known there. Once the queue is empty a moment more lets that
// stream write what it took. This narrows the window; it cannot close it
// (docs/relay.md).
func settle(ctx context.Context) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	ch := cs.NotificationChannel()
	deadline := time.Now().Add(settleLimit)
	for len(ch) > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(5 * time.Millisecond)
}

// callPeer builds the upstream.Peer of the call in ctx (nil when ctx holds
// no client call, as in tests calling handlers directly).
func (r *relay) callPeer(ctx context.Context) upstream.Peer {
	req, ok := ctx.Value(callReqKey{}).(*mcp.CallToolRequest)
	if !ok {
		return nil
	}
	p := r.peer(ctx)
	if req.Params.Meta != nil {
		p.token = req.Params.Meta.ProgressToken
	}
	return p
}

// clientPeer is one client call as the upstream manager sees it.
type clientPeer struct {
	mcp     *mcpserver.MCPServer
	ctx     context.Context // the client call's handler context
	log     *zap.Logger
	token   mcp.ProgressToken
	session string
	park    *parked       // non-nil for a stateless client: ask through input_required
	notes   *atomic.Bool  // set once a notification was relayed for the call (nil: not tracked)
	ended   chan struct{} // closed when the session ends (nil: not known to end)
	// detached: the peer stands for its session, not one call, so asking
	// the client does not end with the call (upstream.SessionPeer).
	detached bool
}

// Detached implements upstream.SessionPeer.
func (p *clientPeer) Detached() upstream.Peer {
	d := *p
	d.detached = true
	return &d
}

func (p *clientPeer) Session() string     { return p.session }
func (p *clientPeer) WantsProgress() bool { return p.token != nil }

// Ended implements upstream.EndingPeer. A nil channel never closes.
func (p *clientPeer) Ended() <-chan struct{} { return p.ended }

func (p *clientPeer) Progress(params map[string]any) {
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	out["progressToken"] = p.token
	ctx, rd := p.target()
	queued, err := deliver(ctx, string(mcp.MethodNotificationProgress), out, func() error {
		return p.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), out)
	})
	p.noted(queued, rd)
	if err != nil {
		p.log.Debug("relaying progress", zap.Error(err))
	}
}

// noted records that a notification of the call went through the
// session's queue, so the answer waits for it (settle): the call's, or
// the round's (rd) of a stateless call.
func (p *clientPeer) noted(queued bool, rd *round) {
	if !queued {
		return
	}
	if rd != nil {
		rd.notes.Store(true)
	}
	if p.notes != nil {
		p.notes.Store(true)
	}
}

func (p *clientPeer) Log(server string, n mcp.LoggingMessageNotification) {
	ctx, rd := p.target()
	queued, err := sendLog(ctx, p.mcp, n)
	p.noted(queued, rd)
	if err != nil && !errors.Is(err, mcpserver.ErrSessionDoesNotSupportLogging) {
		p.log.Debug("relaying a log message", zap.String("upstream", server), zap.Error(err))
	}
}

// capabilities are what the client declared: per request on 2026-07-28,
// at initialize before.
func (p *clientPeer) capabilities() mcp.ClientCapabilities {
	if info := mcpserver.RequestProtocolInfoFromContext(p.ctx); info != nil && info.Modern {
		if info.ClientCapabilities != nil {
			return *info.ClientCapabilities
		}
		return mcp.ClientCapabilities{}
	}
	if cs, ok := mcpserver.ClientSessionFromContext(p.ctx).(mcpserver.SessionWithClientInfo); ok {
		return cs.GetClientCapabilities()
	}
	return mcp.ClientCapabilities{}
}

// asking joins the upstream request's context (which ends when the
// upstream gives up) with the client call's (which ends when the client
// cancels or disconnects, or, for a parked call, when it is forgotten):
// the client is asked under both.
func (p *clientPeer) asking(ctx context.Context) (context.Context, context.CancelFunc) {
	base := p.ctx
	if p.detached {
		base = context.WithoutCancel(base)
	}
	c, cancel := context.WithCancel(base)
	stop := context.AfterFunc(ctx, cancel)
	return c, func() { stop(); cancel() }
}

func noCapability(what, capability string) error {
	return fmt.Errorf("the client that made this call declared no %q capability, so mcproxy cannot ask it for %s", capability, what)
}

func (p *clientPeer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if p.capabilities().Sampling == nil {
		return nil, noCapability("a model completion (sampling/createMessage)", "sampling")
	}
	c, cancel := p.asking(ctx)
	defer cancel()
	if p.park != nil {
		resp, err := p.park.answer(c, mcp.NewSamplingInputRequest(req.CreateMessageParams), mcp.MethodSamplingCreateMessage)
		return resp.Sampling, err
	}
	return p.mcp.RequestSampling(c, req)
}

func (p *clientPeer) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	caps := p.capabilities().Elicitation
	if caps == nil {
		return nil, noCapability("input from the user (elicitation/create)", "elicitation")
	}
	if req.Params.Mode == mcp.ElicitationModeURL && caps.URL == nil {
		return nil, errors.New("the client that made this call supports only form elicitation (it declared no elicitation.url capability), so mcproxy cannot send it a URL elicitation")
	}
	c, cancel := p.asking(ctx)
	defer cancel()
	if p.park != nil {
		resp, err := p.park.answer(c, mcp.NewElicitationInputRequest(req.Params), mcp.MethodElicitationCreate)
		return resp.Elicitation, err
	}
	return p.mcp.RequestElicitation(c, req)
}

// HasRoots implements upstream.RootsPeer: whether the client declared the
// roots capability, so it can answer roots/list.
func (p *clientPeer) HasRoots() bool { return p.capabilities().Roots != nil }

func (p *clientPeer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if p.capabilities().Roots == nil {
		return nil, noCapability("its roots (roots/list)", "roots")
	}
	// Roots are the session's, not the call's: a server may ask for them
	// while any call is in flight (server-everything does on its first),
	// and the call may end before the client answers. A session-wide ask
	// outlives the call, so the answer is not refused on arrival.
	asker := p
	if p.park == nil && !p.detached {
		asker = p.Detached().(*clientPeer)
	}
	c, cancel := asker.asking(ctx)
	defer cancel()
	if p.park != nil {
		resp, err := p.park.answer(c, mcp.NewRootsInputRequest(), mcp.MethodListRoots)
		return resp.Roots, err
	}
	return p.mcp.RequestRoots(c, req)
}

type parkKey struct{}

// parked is a stateless client's call whose upstream is waiting for an
// answer only the client can give. The call runs on its own goroutine
// under a context of its own (each round trip is a separate client
// request); it ends with the call, when pendingTTL passes without a retry,
// or when the client's retry names it and then goes away.
type parked struct {
	id     string
	cancel context.CancelFunc
	asks   chan parkedAsk // the upstream's requests, one at a time
	done   chan struct{}  // closed when the call returned
	res    *mcp.CallToolResult
	err    error

	mu      sync.Mutex
	waiting *parkedAsk // the ask the client was sent, awaiting its answer
	timer   *time.Timer
	cur     *round // the client request being answered now (nil between rounds)
}

type parkedAsk struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // capacity 1
}

// ask hands req to the client through the call's next input_required
// result and waits for the retry that answers it.
func (p *parked) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := parkedAsk{req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case p.asks <- a:
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
	select {
	case resp := <-a.answer:
		return resp, nil
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
}

// answer asks req through the client's next round trip and decodes its
// answer as method's result (the matching field of the response is set).
func (p *parked) answer(ctx context.Context, req mcp.InputRequest, method mcp.MCPMethod) (mcp.InputResponse, error) {
	resp, err := p.ask(ctx, req)
	if err != nil {
		return mcp.InputResponse{}, err
	}
	if err := resp.DecodeFor(method); err != nil {
		return mcp.InputResponse{}, fmt.Errorf("the client's answer to %s does not decode as its result: %w", method, err)
	}
	if resp.Sampling == nil && resp.Elicitation == nil && resp.Roots == nil {
		return mcp.InputResponse{}, fmt.Errorf("the client answered %s with an empty result", method)
	}
	return resp, nil
}

// inputKey names the single input request of each round.
const inputKey = "mcproxy"

// UpstreamError is what a 2026-07-28 client's request is answered with
// when the upstream answered it (forwarded as sent, upstream.Forward, or
// as mcproxy's own request) with a JSON-RPC error: an error of that code
// and data (a capability the client did not declare is the upstream's
// -32021, a requestState it refuses its -32602), with err's text. It is
// nil for any other err, which the caller reports as it always has.
func UpstreamError(ctx context.Context, err error) error {
	var re *upstream.RPCError
	if !errors.As(err, &re) || !mcpserver.IsModernRequest(ctx) {
		return nil
	}
	return &mcptransport.CodedError{Code: re.Code, Message: err.Error(), Data: re.Data}
}

// statePrefix starts the requestState of every call the relay parks, so
// that a retry naming one is told apart from one naming an upstream's own
// state (forwarded to it as sent).
const statePrefix = "mcproxy-"

// roundTrip serves a stateless client's tools/call: a fresh call starts
// parked; a retry carrying a requestState of the relay's answers the
// parked call's open question. Either way it answers with the call's
// result or its next question. The call goes upstream with the client's
// _meta, inputResponses and requestState (forwarding): a 2026-07-28
// upstream answers it once, its own input_required result included, and
// a retry carrying its requestState is a fresh call to the relay.
func (r *relay) roundTrip(ctx context.Context, req mcp.CallToolRequest, next mcpserver.ToolHandlerFunc) (*mcp.CallToolResult, error) {
	var p *parked
	if state := req.Params.RequestState; strings.HasPrefix(state, statePrefix) {
		r.mu.Lock()
		p = r.pending[state]
		r.mu.Unlock()
		if p == nil {
			return nil, fmt.Errorf("requestState %q names no call waiting for input (it finished, or waited more than %s); send the call again without requestState", state, pendingTTL)
		}
		resp, ok := req.Params.InputResponses[inputKey]
		p.mu.Lock()
		w := p.waiting
		if ok && w != nil {
			p.waiting = nil
		}
		p.mu.Unlock()
		if !ok || w == nil {
			return nil, fmt.Errorf("the retry of a call waiting for input must carry inputResponses[%q]", inputKey)
		}
		// This request carries what the call sends from now on, so it
		// becomes current before the call resumes (loglevel.go).
		rd, done := r.answering(ctx, p)
		defer done()
		w.answer <- resp
		return r.awaitRound(ctx, p, rd)
	}
	p, rd, done := r.park(forwarding(ctx, req.Params.Meta, req.Params.MultiRoundTripParams), req, next)
	defer done()
	return r.awaitRound(ctx, p, rd)
}

// park starts a stateless client's call on its own goroutine, with ctx's
// request as its current round (done ends that).
func (r *relay) park(ctx context.Context, req mcp.CallToolRequest, next mcpserver.ToolHandlerFunc) (p *parked, rd *round, done func()) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p = &parked{id: statePrefix + hex.EncodeToString(b[:]), cancel: cancel, asks: make(chan parkedAsk), done: make(chan struct{})}
	// Unanswered past the TTL, the call is cancelled and forgotten; a late
	// retry is told to start over.
	p.timer = time.AfterFunc(r.ttl, func() { r.forget(p) })
	r.mu.Lock()
	r.pending[p.id] = p
	r.mu.Unlock()
	r.want(ctx, p)
	rd, done = r.answering(ctx, p)
	cctx = context.WithValue(cctx, parkKey{}, p)
	cctx = context.WithValue(cctx, callReqKey{}, &req)
	// The relay owns this goroutine; forget (the call's end, the client
	// giving up, or the TTL) cancels its context, which ends it.
	goroutine.Go(r.log, "parked tool call", func() {
		defer close(p.done)
		defer goroutine.Recover(r.log, "parked tool call", func(v any) { p.err = goroutine.Error(v) })
		p.res, p.err = next(cctx, req)
	})
	return p, rd, done
}

// await answers with p's result, or with its next question as an
// input_required result. When ctx ends first, p stays parked for a retry.
func (r *relay) await(ctx context.Context, p *parked) (*mcp.CallToolResult, error) {
	select {
	case <-p.done:
		r.forget(p)
		return p.res, p.err
	case a := <-p.asks:
		p.mu.Lock()
		p.waiting = &a
		p.timer.Reset(r.ttl)
		p.mu.Unlock()
		return &mcp.CallToolResult{
			Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
			MultiRoundTripResult: mcp.MultiRoundTripResult{
				InputRequests: mcp.InputRequests{inputKey: a.req},
				RequestState:  p.id,
			},
		}, nil
	case <-ctx.Done():
		// The client gave up on this request (cancelled it or went away):
		// the call is cancelled with it. A call stays parked only between
		// an input_required answer and its retry.
		r.forget(p)
		return nil, ctx.Err()
	}
}

// forget cancels p's call (if still running) and drops it. It may run more
// than once.
func (r *relay) forget(p *parked) {
	p.timer.Stop()
	p.cancel()
	r.mu.Lock()
	delete(r.pending, p.id)
	_, wanted := r.wanted[p]
	delete(r.wanted, p)
	r.mu.Unlock()
	if wanted {
		r.upstreamLevel(context.Background(), false)
	}
}
