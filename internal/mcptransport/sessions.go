package mcptransport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/session"
)

// This file is the life cycle of streamable HTTP sessions: which
// Mcp-Session-Id values are accepted, and when a session ends.
//
//   - An id is 128 random bits (crypto/rand), issued by initialize and held
//     only in this process's memory. A request naming any other id, a made-up
//     one, one ended by DELETE or by the idle timeout, or one issued by an
//     earlier run of mcproxy, gets 404 before anything runs or touches the
//     disk, and the client initializes a new session (the MCP spec's rule
//     for 404). Resuming a session across restarts is refused: nothing a
//     client holds proves it owned the id, so its files are reachable only
//     through the CLI (`mcproxy sessions`). With a shared store
//     (HTTPOptions.Sessions, shared.go) an id is also held in the store,
//     and any replica, a restarted one too, continues it for the identity
//     it is bound to while it is not idle.
//   - A session is its initializer's (issue 31): bound to the identity of
//     the request that made it (ownerOf: the profile and the token's name),
//     a request of another identity naming it gets the 404 of an unknown
//     id. Legacy SSE sessions are bound the same way (sseOwners).
//   - At most max sessions live at once (limits.max_sessions): an initialize
//     past that gets 503 with a JSON-RPC error naming the key, so a client
//     that initializes in a loop cannot grow memory without bound within
//     one idle timeout.
//   - DELETE ends a session for good.
//   - A session with no request in flight and none for the idle timeout is
//     ended as DELETE ends it; its noa host is released (files closed), so
//     a client that vanishes without DELETE (the TypeScript SDK's close()
//     sends none) costs nothing once the timeout has passed.
//
// Clients of the stateless 2026-07-28 revision carry no session id: mcp-go
// gives each of their requests an ephemeral session of its own, and noa
// keeps nothing for them (sessionIDFunc), so there is no per-client state
// to exhaust or borrow.

// sessionRegistry is the mcp-go SessionIdManager of the streamable HTTP
// transport: the ids it issued and still accepts, with their activity.
type sessionRegistry struct {
	idle time.Duration
	// max is the most live sessions (limits.max_sessions); zero means
	// config.DefaultMaxSessions.
	max int
	log *zap.Logger
	// end ends a session as DELETE does (set once the transport exists).
	end func(id string)
	// store shares sessions with other replicas (shared.go); nil keeps
	// them in this process only.
	store SessionStore
	// replay is mcp-go's streamable handler, for adopt's initialize.
	replay http.Handler

	mu        sync.Mutex
	sessions  map[string]*sessionActivity
	admitting int // initializes running, counted against max
	// adopting are the sessions adopt is rebuilding, closed when done.
	adopting map[string]chan struct{}
}

// sessionActivity is what the idle sweep needs of one session, and whose
// it is.
type sessionActivity struct {
	// owner is the identity that initialized the session (ownerOf); a
	// request of another identity naming it is answered as if it did not
	// exist.
	owner    string
	last     atomic.Int64 // unix nanoseconds of the last request's start or end
	inFlight atomic.Int32 // requests running (a listening GET counts)
	touched  atomic.Int64 // unix nanoseconds of the last TouchSession
}

var errUnknownSession = errors.New("unknown session id: initialize a new session")

func newSessionRegistry(idle time.Duration, log *zap.Logger) *sessionRegistry {
	return &sessionRegistry{idle: idle, log: log, sessions: map[string]*sessionActivity{}, adopting: map[string]chan struct{}{}}
}

// newID is a fresh session id: 128 random bits, hex-encoded.
func newID() string {
	var b [16]byte
	// crypto/rand.Read never fails on supported platforms (it panics
	// rather than return weak bytes).
	_, _ = rand.Read(b[:])
	return "mcp-" + hex.EncodeToString(b[:])
}

// ownerOf names who a request comes from, for binding a session to it
// (issue 31): its profile and its identity's label (the client token's
// name, never its value; "(admin)" for auth_token; "(anonymous)" when no
// credential is configured). Two clients with one label are one principal.
func ownerOf(req *http.Request) string {
	var id clientauth.Identity
	if req != nil {
		id, _ = clientauth.FromContext(req.Context())
	}
	return id.Profile + "/" + id.Label()
}

// Generate issues a new id for a session of no identity (the registry's
// own tests); requests get theirs through ResolveSessionIdManager.
func (r *sessionRegistry) Generate() string { return r.issue(ownerOf(nil)) }

// issue registers a new id owned by owner.
func (r *sessionRegistry) issue(owner string) string {
	id := newID()
	r.register(id, owner)
	return id
}

// register makes id a live session of owner.
func (r *sessionRegistry) register(id, owner string) {
	a := &sessionActivity{owner: owner}
	a.last.Store(time.Now().UnixNano())
	a.touched.Store(a.last.Load())
	r.mu.Lock()
	r.sessions[id] = a
	r.mu.Unlock()
}

// ResolveSessionIdManager makes the registry mcp-go's
// SessionIdManagerResolver: an initialize's id is bound to the identity
// of the request that made it (ownerOf), and shared through the store.
func (r *sessionRegistry) ResolveSessionIdManager(req *http.Request) mcpserver.SessionIdManager {
	o := ownedIDs{sessionRegistry: r, owner: ownerOf(req), local: req == nil}
	if req != nil {
		ctx := req.Context()
		o.initialize, _ = ctx.Value(initKey{}).([]byte)
		o.adopt, _ = ctx.Value(adoptKey{}).(string)
		o.local = o.local || ctx.Value(localKey{}) != nil
	}
	return o
}

// ownedIDs is the registry as seen by one request.
type ownedIDs struct {
	*sessionRegistry
	owner string
	// initialize is the body of the initialize being answered, for the
	// store; adopt the id a replayed initialize is to get (shared.go).
	initialize []byte
	adopt      string
	// local ends a session on this replica only (the idle sweep, shutdown).
	local bool
}

func (o ownedIDs) Generate() string {
	if o.adopt != "" {
		o.register(o.adopt, o.owner)
		return o.adopt
	}
	id := o.issue(o.owner)
	if o.store != nil && o.initialize != nil {
		o.save(id, o.owner, o.initialize)
	}
	return id
}

// Terminate ends id here and, for a client's DELETE, on every replica.
func (o ownedIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if o.store != nil && !o.local {
		o.forget(id)
	}
	return o.sessionRegistry.Terminate(id)
}

// Validate accepts only ids issued by Generate and not ended since.
func (r *sessionRegistry) Validate(id string) (isTerminated bool, err error) {
	r.mu.Lock()
	_, ok := r.sessions[id]
	r.mu.Unlock()
	if !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate forgets id: every later request naming it gets 404.
func (r *sessionRegistry) Terminate(id string) (isNotAllowed bool, err error) {
	r.mu.Lock()
	delete(r.sessions, id)
	r.mu.Unlock()
	return false, nil
}

// Len is the number of live sessions.
func (r *sessionRegistry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// track wraps the streamable HTTP handler: a request naming an issued
// session keeps it alive while it runs (a listening GET, a long call) and
// restarts its idle clock when it ends.
func (r *sessionRegistry) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get(mcpserver.HeaderKeySessionID)
		if id == "" {
			r.admit(w, req, next)
			return
		}
		r.mu.Lock()
		a := r.sessions[id]
		r.mu.Unlock()
		if a == nil && r.store != nil {
			a = r.adopt(req, id)
		}
		switch {
		case a == nil && req.Method == http.MethodPost:
			// mcp-go answers an unknown id (unknownSession's answer) or,
			// for a stateless 2026-07-28 request, ignores it.
			next.ServeHTTP(w, req)
			return
		case a == nil || a.owner != ownerOf(req):
			// Unknown (a GET would open a stream under it, a DELETE end
			// nothing), or another identity's: one answer for all, so a
			// client cannot learn that an id it holds is live.
			unknownSession(w)
			return
		}
		if r.store != nil {
			r.touch(id, a)
			r.levels(id, req)
		}
		a.inFlight.Add(1)
		a.last.Store(time.Now().UnixNano())
		defer func() {
			a.last.Store(time.Now().UnixNano())
			a.inFlight.Add(-1)
		}()
		next.ServeHTTP(w, req)
	})
}

// unknownSession answers a request naming a session that does not exist
// for it, as mcp-go answers an id its Validate refuses (404, the MCP
// spec's signal to initialize anew).
func unknownSession(w http.ResponseWriter) {
	http.Error(w, "Invalid session ID", http.StatusNotFound)
}

// admit passes a request that names no session to next, unless it is an
// initialize while max sessions are live or being initialized: that gets
// 503 with a JSON-RPC error naming limits.max_sessions. A session being
// initialized counts until its initialize has been answered, so
// concurrent initializes cannot overshoot max.
func (r *sessionRegistry) admit(w http.ResponseWriter, req *http.Request, next http.Handler) {
	if req.Method != http.MethodPost || req.Body == nil {
		next.ServeHTTP(w, req)
		return
	}
	data, err := bodyBytes(req)
	e, ok := readElement(data)
	if err != nil || !ok || e.Method != string(mcp.MethodInitialize) {
		next.ServeHTTP(w, req)
		return
	}
	max := r.max
	if max <= 0 {
		max = config.DefaultMaxSessions
	}
	r.mu.Lock()
	open := len(r.sessions)
	full := open+r.admitting >= max
	if !full {
		r.admitting++
	}
	r.mu.Unlock()
	if full {
		w.Header().Set("Retry-After", "60")
		writeJSON(w, http.StatusServiceUnavailable, rpcError(e.ID, ErrCodeTooManySessions, fmt.Sprintf(
			"too many sessions: %d are open, the limit is %d (limits.max_sessions); close clients you no longer use (a session also ends after session_idle_timeout, %s, without requests), or raise limits.max_sessions in the config",
			open, max, r.idle)))
		return
	}
	defer func() {
		r.mu.Lock()
		r.admitting--
		r.mu.Unlock()
	}()
	if r.store != nil {
		req = req.WithContext(context.WithValue(req.Context(), initKey{}, data))
	}
	next.ServeHTTP(w, req)
}

// ErrCodeTooManySessions is the JSON-RPC error code of an initialize
// refused by limits.max_sessions (the implementation-defined server error
// range).
const ErrCodeTooManySessions = -32000

// sweep ends every session idle for longer than r.idle at now.
func (r *sessionRegistry) sweep(now time.Time) int {
	cutoff := now.Add(-r.idle).UnixNano()
	var idle []string
	r.mu.Lock()
	for id, a := range r.sessions {
		if a.inFlight.Load() == 0 && a.last.Load() < cutoff {
			idle = append(idle, id)
		}
	}
	r.mu.Unlock()
	for _, id := range idle {
		r.end(id)
	}
	return len(idle)
}

// run sweeps (session.SweepIdle) until ctx ends.
func (r *sessionRegistry) run(ctx context.Context) {
	session.SweepIdle(ctx, r.idle, r.log, func(now time.Time) {
		if n := r.sweep(now); n > 0 {
			r.log.Info("closed idle client sessions", zap.Int("sessions", n), zap.Duration("session_idle_timeout", r.idle), zap.Int("open", r.Len()))
		}
	})
}

// endByDelete returns the function that ends a session of h exactly as a
// client's DELETE does (the id forgotten, mcp-go's per-session state
// dropped, the session unregistered so its noa host is released).
func endByDelete(h http.Handler) func(id string) {
	return func(id string) {
		req, err := http.NewRequestWithContext(context.WithValue(context.Background(), localKey{}, true), http.MethodDelete, PathStreamable, http.NoBody)
		if err != nil {
			return // a constant method and path: cannot fail
		}
		req.Header.Set(mcpserver.HeaderKeySessionID, id)
		h.ServeHTTP(&recorder{header: http.Header{}}, req)
	}
}

// sseOwners binds each legacy SSE session to the identity that opened its
// stream, as sessionRegistry binds streamable ones: a message posted to
// another identity's session is answered as one naming no session.
type sseOwners struct {
	mu     sync.Mutex
	owners map[string]string // session id → ownerOf the GET /sse
}

type sseStreamKey struct{}

func newSSEOwners() *sseOwners { return &sseOwners{owners: map[string]string{}} }

// generate is mcp-go's SSE session id generator: a fresh id bound to the
// identity of the GET that opens the stream, and noted in the request's
// context for stream, which forgets it when the stream ends.
func (o *sseOwners) generate(ctx context.Context, req *http.Request) (string, error) {
	id := newID()
	o.mu.Lock()
	o.owners[id] = ownerOf(req)
	o.mu.Unlock()
	if p, ok := ctx.Value(sseStreamKey{}).(*string); ok {
		*p = id
	}
	return id, nil
}

// stream wraps the SSE handler: the session its request opens is unbound
// once the stream ends (mcp-go forgets the session then too).
func (o *sseOwners) stream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var id string
		next.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), sseStreamKey{}, &id)))
		if id != "" {
			o.mu.Lock()
			delete(o.owners, id)
			o.mu.Unlock()
		}
	})
}

// messages wraps the message handler: a post naming another identity's
// session goes on naming an id never issued, so that mcp-go gives it
// exactly the answer of an unknown session.
func (o *sseOwners) messages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		id := q.Get("sessionId")
		o.mu.Lock()
		owner, ok := o.owners[id]
		o.mu.Unlock()
		if ok && owner != ownerOf(req) {
			q.Set("sessionId", newID())
			req = req.Clone(req.Context())
			req.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, req)
	})
}
