package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Roots are connection state on a 2025-11-25 server: it asks roots/list
// once (after initialize, on its first call, after roots/list_changed) and
// keeps the answer for the whole connection, which every front session
// shares. So per connection mcproxy tracks whether the server has asked
// and whose roots it holds (the owner), and runs the calls of a server
// that asked as follows (issue 26):
//
//   - Calls of one front session run in parallel; calls of different
//     sessions never overlap, in arrival order.
//   - A call of session S to a server holding another session's roots (or
//     none, or S's from before S said they changed) first tells it
//     roots/list_changed while S's call is the only one in flight, so its
//     re-ask is answered by S; then a ping, so the answer has reached the
//     server before the call does.
//   - A server that re-asks keeps roots; if S cannot answer (it declared
//     no roots capability) and the server still holds another session's,
//     S's call fails saying why. A server that does not re-ask within
//     Options.RootsWait is taken to ask when it needs the roots (during a
//     call, answered by that call's client, like the mcp-go servers in
//     the tests): the call goes on, and list_changed is not sent to it
//     for a session switch again on that connection.
//   - A re-ask arriving with no call in flight is answered by the owner,
//     never by another session; a roots/list_changed from S is forwarded
//     only to the servers holding S's roots.
//   - Callers without a session (stateless 2026-07-28 clients) count as one
//     owner and are not asked before their calls (canSync): their calls
//     take turns with the sessions' and see the roots the server holds.
//   - Nor is a session with no roots to give (its client declared no roots
//     capability) while the server holds nobody's (syncsLocked).
//
// Servers that never asked are not gated at all. A 2026-07-28 server asks
// for roots with each request that needs them (input_required), answered
// by that request's caller, so it is not gated either.

// DefaultRootsWait is how long a call waits for a server to ask for its
// session's roots after roots/list_changed (Options.RootsWait).
const DefaultRootsWait = 2 * time.Second

// owner identifies whose roots a server holds: a front session, every
// caller with no session together (stateless), or an ended one (goneOwner).
type owner struct {
	session string
	call    *inflight
}

// goneOwner stands for roots of a session or call that has ended: still
// somebody else's, and nobody can be asked for them any more.
var goneOwner = owner{call: &inflight{}}

func (o owner) none() bool { return o == owner{} }

// EndingPeer is implemented by a Peer whose client session can end: the
// channel is closed when it has. A session that ended stops being the
// owner of a server's roots (nobody answers for it again).
type EndingPeer interface {
	Ended() <-chan struct{}
}

// rootsState is the roots side of calls (guarded by calls.mu).
type rootsState struct {
	asked     bool  // the server has sent roots/list at least once
	owner     owner // whose roots it holds (zero: nobody's)
	ownerPeer Peer  // asks the owner outside any call (nil: nobody can be asked)
	ownerEnd  <-chan struct{}
	syncing   bool          // a call is making the server take its session's roots
	stale     bool          // the owner's roots changed since the server took them
	deaf      bool          // a roots/list_changed got no re-ask in time: not sent again
	answers   uint64        // roots/list requests answered (or refused)
	answered  chan struct{} // closed and replaced at each answer
	queue     []*inflight   // calls waiting for their turn, in arrival order
}

// stateless is the owner key every caller without a session shares (a
// stateless 2026-07-28 client). Its requests carry no identity that lasts
// beyond one call, so they cannot be told apart from each other: keyed per
// call, every call would make the server re-ask for roots (an extra round
// trip to the client each time), and a prompts/get or resources/read,
// which cannot relay the re-ask, would be refused after any tool call.
var stateless = owner{session: "\x00stateless"}

// canSync reports whether in's caller is asked for its roots before in is
// sent. A caller without a session (a stateless 2026-07-28 client) is not:
// it could be asked only through its tool call's input_required result
// (a prompts/get, resources/read or completion has none), and mcp-go
// encodes a roots/list input request without "params", which the Go SDK
// client cannot decode (issue 29). Its calls take turns with the sessions'
// and go on with the roots the server holds; a re-ask during its tool call
// is answered by that call, as before.
func (in *inflight) canSync() bool { return in.key != stateless }

// RootsPeer is implemented by a Peer that can tell whether its client has
// roots to give (it declared the roots capability). A Peer that does not
// implement it is taken to have them.
type RootsPeer interface {
	HasRoots() bool
}

// syncsLocked reports whether in, admitted with resync, must first make
// the server take its caller's roots: not for a caller without a session
// (canSync), nor for one with no roots to give while the server holds
// nobody's. Such a caller would refuse the re-ask and the server would
// still hold none, so each of its calls would wait for a
// roots/list_changed, the re-ask and its refusal for nothing (issue 28:
// every echo to the npm server-everything, which asks once, from a client
// without roots), and nothing another session gave could leak to it.
func (c *calls) syncsLocked(in *inflight) bool {
	if !in.canSync() {
		return false
	}
	if rp, ok := in.peer.(RootsPeer); ok && !rp.HasRoots() && c.roots.owner.none() {
		return false
	}
	return true
}

// keyOf is whose roots a call of p needs.
func keyOf(p Peer, _ *inflight) owner {
	if s := p.Session(); s != "" {
		return owner{session: s}
	}
	return stateless
}

// ownerGoneLocked notices that the owner's session ended.
func (c *calls) ownerGoneLocked() {
	if c.roots.ownerEnd == nil {
		return
	}
	select {
	case <-c.roots.ownerEnd:
		c.roots.owner, c.roots.ownerPeer, c.roots.ownerEnd = goneOwner, nil, nil
	default:
	}
}

// admissibleLocked reports whether a call for key may start now, and
// whether it must make the server take its roots first.
func (c *calls) admissibleLocked(key owner) (ok, resync bool) {
	if c.roots.syncing {
		return false, false
	}
	for in := range c.set {
		if in.key != key {
			return false, false
		}
	}
	c.ownerGoneLocked()
	// A server that ignored roots/list_changed is not told again: its
	// calls only take turns.
	return true, !c.roots.deaf && (c.roots.owner != key || c.roots.stale)
}

// admitLocked starts the waiting calls whose turn it is.
func (c *calls) admitLocked() {
	for len(c.roots.queue) > 0 {
		in := c.roots.queue[0]
		ok, resync := c.admissibleLocked(in.key)
		if !ok {
			return
		}
		c.roots.queue = c.roots.queue[1:]
		c.registerLocked(in)
		resync = resync && c.syncsLocked(in)
		in.resync = resync
		c.roots.syncing = resync
		close(in.admitted)
	}
}

// wait blocks until in's turn (begin queued it), or ctx ends.
func (c *calls) wait(ctx context.Context, in *inflight) error {
	select {
	case <-in.admitted:
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-in.admitted:
		// Admitted just as ctx ended: give the turn back.
		c.endLocked(in)
		if in.resync {
			c.roots.syncing = false
		}
	default:
		for i, w := range c.roots.queue {
			if w == in {
				c.roots.queue = append(c.roots.queue[:i:i], c.roots.queue[i+1:]...)
				break
			}
		}
	}
	c.admitLocked()
	return ctx.Err()
}

// rootsPeer finds who answers a roots/list on a 2025-11-25 connection:
// the call it came with (on that call's stream) or the one session whose
// calls are in flight; with none in flight, the owner, asked under a
// stand-in call of its own so no other session starts meanwhile. done
// records the answer and ends the stand-in.
func (c *calls) rootsPeer(ctx context.Context) (p Peer, done func(ok bool), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roots.asked = true
	if c.roots.syncing {
		// The re-ask of a call making the server take its roots (a quiet
		// one too): only that call's session is in flight.
		for in := range c.set {
			if in.resync {
				return in.peer, func(ok bool) {
					c.mu.Lock()
					defer c.mu.Unlock()
					c.answeredLocked(in, ok)
				}, nil
			}
		}
	}
	in, err := c.peerForLocked(ctx)
	if err != nil && len(c.set) == 0 {
		c.ownerGoneLocked()
		if c.roots.ownerPeer == nil {
			return nil, nil, fmt.Errorf("%w: mcproxy relays a server's requests only while one of its tool calls is in flight, and none is (nor has a client session given this server its roots)", ErrNoPeer)
		}
		stand := &inflight{peer: c.roots.ownerPeer, key: c.roots.owner}
		c.registerLocked(stand)
		return stand.peer, func(ok bool) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.answeredLocked(stand, ok)
			c.endLocked(stand)
			c.admitLocked()
		}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return in.peer, func(ok bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.answeredLocked(in, ok)
	}, nil
}

// answeredLocked records a roots/list answered for in's key: on success
// the server now holds that key's roots.
func (c *calls) answeredLocked(in *inflight, ok bool) {
	if ok {
		c.roots.owner = in.key
		c.roots.ownerPeer = in.peer
		if in.key == stateless {
			c.roots.ownerPeer = nil // its call ends with it: nobody to ask later
		} else if sp, isSession := in.peer.(SessionPeer); isSession {
			c.roots.ownerPeer = sp.Detached()
		}
		c.roots.ownerEnd = nil
		if ep, ending := in.peer.(EndingPeer); ending {
			c.roots.ownerEnd = ep.Ended()
		}
	}
	c.roots.answers++
	if c.roots.answered != nil {
		close(c.roots.answered)
	}
	c.roots.answered = make(chan struct{})
}

// changed reports whether the server holds session's roots, which just
// changed; if so, the session's next call waits for the server to have
// asked again (the re-ask roots/list_changed prompts may come after it).
func (c *calls) changed(session string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if session == "" || c.roots.owner.session != session {
		return false
	}
	c.roots.stale = true
	return true
}

// errRootsRefused starts the error of a call that is not sent because the
// server would serve it with another client's roots.
var errRootsRefused = errors.New("mcproxy did not send this call, because the server would see another client session's roots")

// syncRoots makes the server take the roots of in's caller before in is
// sent: roots/list_changed, then the server's re-ask (answered by in's
// caller, the only one in flight), then a ping. in must have been admitted
// with resync set; syncRoots ends the syncing either way. It fails only
// when the server re-asked, in's caller could not answer, and the server
// keeps another session's roots.
func (s *session) syncRoots(ctx context.Context, in *inflight, wait time.Duration, log *zap.Logger) error {
	c := &s.calls
	defer func() {
		c.mu.Lock()
		c.roots.syncing, in.resync = false, false
		c.admitLocked()
		c.mu.Unlock()
	}()
	c.mu.Lock()
	deaf, start := c.roots.deaf, c.roots.answers
	if c.roots.answered == nil {
		c.roots.answered = make(chan struct{})
	}
	ch := c.roots.answered
	c.mu.Unlock()
	if deaf {
		return nil // it went deaf while this call waited
	}
	if err := s.client.RootListChanges(ctx); err != nil {
		log.Debug("sending roots/list_changed before a call", zap.Error(err))
		return nil
	}
	if !s.awaitReask(ctx, ch, start, wait) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A server that does not re-ask is taken to ask when it needs the
		// roots (during the call, answered by its caller); it is not
		// waited for again on this connection.
		c.mu.Lock()
		c.roots.deaf = true
		c.mu.Unlock()
		log.Info("the upstream did not ask for roots/list after notifications/roots/list_changed; its calls go on without waiting for it",
			zap.Duration("waited", wait))
		return nil
	}
	c.mu.Lock()
	got, nobody := c.roots.owner == in.key, c.roots.owner.none()
	if got {
		c.roots.stale = false
	}
	c.mu.Unlock()
	switch {
	case got:
		// The answer and the call go out on different goroutines; a ping
		// answered after the answer was written puts it before the call.
		if err := s.ping(ctx); err != nil && ctx.Err() == nil {
			log.Debug("ping after the roots/list answer", zap.Error(err))
		}
		return ctx.Err()
	case nobody:
		return nil // it holds no client's roots: nothing to leak
	}
	return fmt.Errorf("%w: it asked this client for its roots (roots/list) and got no answer, so it still holds another session's. Use a client that declares the roots capability and answers roots/list",
		errRootsRefused)
}

// awaitReask waits until a roots/list is answered after the start'th;
// false when wait or ctx ends first.
func (s *session) awaitReask(ctx context.Context, ch chan struct{}, start uint64, wait time.Duration) bool {
	c := &s.calls
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ch:
			c.mu.Lock()
			n := c.roots.answers
			ch = c.roots.answered
			c.mu.Unlock()
			if n > start {
				return true
			}
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// listRoots answers a roots/list of a 2025-11-25 connection (rootsPeer).
func (h relayHandlers) listRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	p, done, err := h.s.calls.rootsPeer(ctx)
	if err != nil {
		return nil, fmt.Errorf("roots/list from %q: %w", h.server, err)
	}
	res, err := p.ListRoots(ctx, req)
	done(err == nil)
	return res, err
}
