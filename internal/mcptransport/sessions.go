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
//     through the CLI (`mcproxy sessions`).
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

	mu        sync.Mutex
	sessions  map[string]*sessionActivity
	admitting int // initializes running, counted against max
}

// sessionActivity is what the idle sweep needs of one session.
type sessionActivity struct {
	last     atomic.Int64 // unix nanoseconds of the last request's start or end
	inFlight atomic.Int32 // requests running (a listening GET counts)
}

var errUnknownSession = errors.New("unknown session id: initialize a new session")

func newSessionRegistry(idle time.Duration, log *zap.Logger) *sessionRegistry {
	return &sessionRegistry{idle: idle, log: log, sessions: map[string]*sessionActivity{}}
}

// Generate issues a new id: 128 random bits, hex-encoded.
func (r *sessionRegistry) Generate() string {
	var b [16]byte
	// crypto/rand.Read never fails on supported platforms (it panics
	// rather than return weak bytes).
	_, _ = rand.Read(b[:])
	id := "mcp-" + hex.EncodeToString(b[:])
	a := &sessionActivity{}
	a.last.Store(time.Now().UnixNano())
	r.mu.Lock()
	r.sessions[id] = a
	r.mu.Unlock()
	return id
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
		if a == nil {
			next.ServeHTTP(w, req)
			return
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
		req, err := http.NewRequest(http.MethodDelete, PathStreamable, http.NoBody)
		if err != nil {
			return // a constant method and path: cannot fail
		}
		req.Header.Set(mcpserver.HeaderKeySessionID, id)
		h.ServeHTTP(&recorder{header: http.Header{}}, req)
	}
}
