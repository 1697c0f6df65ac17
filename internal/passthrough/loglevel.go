package passthrough

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// This file applies the log level of stateless (2026-07-28) clients. Such
// a client sends no logging/setLevel: each request carries its level in
// _meta (io.modelcontextprotocol/logLevel), and a request without one gets
// no notifications/message at all (SEP-2575).
//
// The front side: the upstream's log messages during a stateless call, and
// mcproxy's own and the upstreams' server-wide messages while a stateless
// request is being answered, are sent on that request's stream, filtered
// at that request's level (mcp-go's SendLogMessageToClient does the
// filtering for a modern request).
//
// The upstream side: a connection to a 2025-11-25 upstream is shared by
// every session and has one level, set with logging/setLevel. While a
// stateless call runs upstream, that level is the most verbose of the
// legacy sessions' levels and the running stateless calls' levels; when
// the call ends it falls back to what the others want (or stays where it
// is when nobody wants anything, since no setLevel can undo one). Raising
// it never changes what another session receives: the front filters every
// message at the level of the session (or request) it is relayed to, and a
// legacy session that never set a level is filtered at mcp-go's default,
// error.

// round is one stateless client request being answered: the first call,
// or a retry that carries an answer.
type round struct {
	ctx   context.Context
	notes atomic.Bool // set once a notification of the call went on its stream
}

// want records the per-request level of a stateless call about to run
// upstream and raises the upstreams' level to it where needed, before the
// upstream call starts.
func (r *relay) want(ctx context.Context, p *parked) {
	info := mcpserver.RequestProtocolInfoFromContext(ctx)
	if info == nil || !upstream.ValidLevel(info.LogLevel) {
		return
	}
	r.mu.Lock()
	r.wanted[p] = info.LogLevel
	r.mu.Unlock()
	r.upstreamLevel(ctx, false)
}

// upstreamLevel sends the most verbose level wanted to the upstreams when
// it differs from the one last sent, or always when force is set (a
// logging/setLevel from a client is applied as asked).
func (r *relay) upstreamLevel(ctx context.Context, force bool) {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.mu.Lock()
	level := r.verboseLocked()
	r.mu.Unlock()
	if level == "" || (!force && level == r.applied) {
		return
	}
	r.applied = level
	r.applyLevel(ctx, level)
}

// answering marks ctx as the stateless request now answered for p: the
// call's notifications go on its stream, and so do server-wide log
// messages. done undoes it.
func (r *relay) answering(ctx context.Context, p *parked) (rd *round, done func()) {
	rd = &round{ctx: ctx}
	p.mu.Lock()
	p.cur = rd
	p.mu.Unlock()
	r.mu.Lock()
	r.rounds[rd] = struct{}{}
	r.mu.Unlock()
	return rd, func() {
		p.mu.Lock()
		if p.cur == rd {
			p.cur = nil
		}
		p.mu.Unlock()
		r.mu.Lock()
		delete(r.rounds, rd)
		r.mu.Unlock()
	}
}

// logToRounds sends a server-wide log message (an upstream's, or
// mcproxy's own) to every stateless request being answered, each at its
// own level.
func (r *relay) logToRounds(server string, n mcp.LoggingMessageNotification) {
	if r.mcp == nil {
		return
	}
	r.mu.Lock()
	rounds := make([]*round, 0, len(r.rounds))
	for rd := range r.rounds {
		rounds = append(rounds, rd)
	}
	r.mu.Unlock()
	for _, rd := range rounds {
		queued, err := sendLog(rd.ctx, r.mcp, n)
		if queued {
			rd.notes.Store(true)
		}
		if err != nil && !errors.Is(err, mcpserver.ErrSessionDoesNotSupportLogging) {
			r.log.Debug("relaying a log message to a stateless request", zap.String("upstream", server), zap.Error(err))
		}
	}
}

// target is the context a notification of the call is sent under: for a
// stateless call, the client request being answered now (a later round's
// retry, not the first request, whose stream has ended) with its round,
// else the call's.
func (p *clientPeer) target() (context.Context, *round) {
	if p.park == nil {
		return p.ctx, nil
	}
	p.park.mu.Lock()
	defer p.park.mu.Unlock()
	if p.park.cur != nil {
		return p.park.cur.ctx, p.park.cur
	}
	return p.ctx, nil
}

// awaitRound is await for one round, whose answer waits, as a legacy
// call's result does (settle), until the notifications sent on its stream
// have left: mcp-go drops one its stream writer took a moment too late.
func (r *relay) awaitRound(ctx context.Context, p *parked, rd *round) (*mcp.CallToolResult, error) {
	res, err := r.await(ctx, p)
	if rd.notes.Load() {
		settle(ctx)
	}
	return res, err
}
