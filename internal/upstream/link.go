package upstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// link is everything the manager knows about one configured server. Its
// supervisor goroutine (run) is the only one that dials, tears down and
// reports tool changes, so one server's listings reach the catalog in order
// and OnToolsChanged is never called concurrently for it; Call and Status
// read the state under mu.
type link struct {
	m    *Manager
	name string
	cfg  config.ServerConfig
	// broken is the problems of the server's config entry
	// (config.Config.Broken); "" for a server that may start.
	broken string
	kind   string
	init   limit
	call   limit
	log    *zap.Logger

	wake      chan struct{} // a call wants a reconnect attempt now (capacity 1)
	firstDone chan struct{} // closed after the first attempt, ok or not
	stop      func()        // ends run; set by launch (reload.go)
	done      chan struct{} // closed when run has returned; set by launch

	mu       sync.Mutex
	state    State
	lastErr  string
	retryAt  time.Time
	failures int       // consecutive failed attempts and losses since the last success
	lastFail time.Time // when the server last went down
	sess     *session  // the live session when ready
	tools    []mcp.Tool
	changed  chan struct{} // closed and replaced on every state change
	since    time.Time     // when state last changed (zero: never started)
	catalog  *Catalog      // prompts, resources, templates (nil unless ready)
	// subs are the resource URIs the front is subscribed to on this
	// server; each new session renews them (catalog.go).
	subs map[string]bool
	// legacy: an earlier connection settled on 2025-11-25 (the server
	// did not answer server/discover, or speaks both revisions), so later
	// ones skip the probe (modern.go).
	legacy atomic.Bool
	// stateless: the server speaks both revisions but serves 2025-11-25
	// over HTTP without a session, where it cannot send server-to-client
	// requests; it is spoken to in 2026-07-28 (modern.go, statelessLegacy).
	stateless atomic.Bool
	// probe is what the last server/discover probe got (a string, "" =
	// none yet), remembered with the revision (revisions.go).
	probe atomic.Value
}

// setState changes the state and wakes everyone waiting on changed. l.mu
// must be held.
func (l *link) setState(s State) {
	if l.state != s {
		l.since = time.Now()
	}
	l.state = s
	close(l.changed)
	l.changed = make(chan struct{})
}

// run is the supervisor: connect, serve until the session is lost, back
// off, repeat, until ctx ends.
func (l *link) run(ctx context.Context) {
	first := true
	markFirst := func() {
		if first {
			first = false
			close(l.firstDone)
		}
	}
	defer func() {
		markFirst()
		l.mu.Lock()
		l.sess, l.tools, l.catalog, l.retryAt = nil, nil, nil, time.Time{}
		if l.state != StateDown {
			l.lastErr = "upstream manager closed"
		}
		l.setState(StateDown)
		l.mu.Unlock()
	}()
	for l.supervise(ctx, markFirst) {
	}
}

// supervise runs run's loop until ctx ends (false). A panic in it is
// logged with its stack and counts as a failed attempt: the server is down
// with the panic as its error and supervise returns true once the back-off
// has passed, for run to go on (before, one panic kept the server down for
// the life of the process).
func (l *link) supervise(ctx context.Context, markFirst func()) (again bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		l.mu.Lock()
		live := l.sess
		d := l.downLocked(goroutine.Error(r))
		l.mu.Unlock()
		l.log.Error("upstream supervisor panicked; retrying", zap.Any("panic", r), zap.Stack("stack"), zap.Duration("retry_in", d))
		if live != nil { // it was ready: its tools leave the catalog
			l.closeSession(live)
			l.notify(nil)
			l.notifyCatalog(nil)
		}
		markFirst()
		again = l.sleep(ctx)
	}()
	for {
		if l.m.beforeAttempt != nil {
			l.m.beforeAttempt(l.name)
		}
		select {
		case <-l.wake: // a request made before this attempt is served by it
		default:
		}
		l.mu.Lock()
		l.setState(StateConnecting)
		l.mu.Unlock()

		stamp := l.tokenStamp()
		sess, tools, err := l.connect(ctx)
		if ctx.Err() != nil {
			l.closeSession(sess)
			return false
		}
		if err != nil {
			d := l.down(err)
			signIn := needsSignIn(err)
			if signIn {
				l.mu.Lock()
				l.setState(StateNeedsSignIn)
				l.mu.Unlock()
				l.log.Warn("upstream needs sign-in", zap.Error(err))
			} else {
				l.log.Warn("upstream unavailable", zap.Error(err), zap.Duration("retry_in", d))
			}
			markFirst()
			l.closeSession(sess)
			var waited bool
			if signIn {
				waited = l.waitSignIn(ctx, stamp)
			} else {
				waited = l.sleep(ctx)
			}
			if !waited {
				return false
			}
			continue
		}

		exposed := l.filter(tools)
		l.mu.Lock()
		l.sess, l.tools, l.failures, l.lastErr, l.retryAt = sess, exposed, 0, "", time.Time{}
		l.catalog = sess.catalog
		l.setState(StateReady)
		early := sess.earlyLoss
		l.mu.Unlock()
		l.notify(exposed)
		l.notifyCatalog(sess.catalog)
		markFirst()
		if early != nil { // lost between initialize and going live
			l.markLost(sess, early)
		}

		l.serve(ctx, sess)

		l.mu.Lock()
		wasCurrent := l.sess == sess
		l.mu.Unlock()
		if wasCurrent { // ctx ended while ready
			l.closeSession(sess)
			return false
		}
		l.notify(nil)
		l.notifyCatalog(nil)
		l.closeSession(sess)
		if !l.sleep(ctx) {
			return false
		}
	}
}

// serve waits for the session to be lost or ctx to end, refreshing the
// tool list whenever the upstream says it changed, and pinging HTTP
// upstreams (an HTTP server that went away sends no signal of its own).
func (l *link) serve(ctx context.Context, s *session) {
	var tick <-chan time.Time
	if s.proc == nil && l.m.pingInterval > 0 {
		t := time.NewTicker(l.m.pingInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.lost:
			return
		case <-s.refresh:
			l.refresh(ctx, s)
		case <-s.catalogRefresh:
			l.refreshCatalog(ctx, s)
		case <-tick:
			l.ping(ctx, s)
		}
	}
}

// ping checks that the upstream still answers. Only a transport failure
// takes the session down: a busy server that answers late is not lost.
func (l *link) ping(ctx context.Context, s *session) {
	pctx, cancel := context.WithTimeout(ctx, l.init.d)
	defer cancel()
	err := s.ping(pctx)
	if err == nil || ctx.Err() != nil {
		return
	}
	if isConnErr(err) && pctx.Err() == nil {
		l.markLost(s, fmt.Errorf("ping failed: %w", err))
		return
	}
	l.log.Debug("ping failed", zap.Error(err))
}

// refresh re-lists the tools after notifications/tools/list_changed and
// reports the new set if it differs.
func (l *link) refresh(ctx context.Context, s *session) {
	rctx, cancel := context.WithTimeout(ctx, l.init.d)
	defer cancel()
	tools, err := s.listTools(rctx, l.log)
	if err != nil {
		l.refreshFailed(ctx, rctx, s, "tools", err)
		return
	}
	exposed := l.filter(tools)
	l.mu.Lock()
	if l.sess != s {
		l.mu.Unlock()
		return
	}
	same := reflect.DeepEqual(exposed, l.tools)
	l.tools = exposed
	l.mu.Unlock()
	if same {
		return
	}
	l.log.Info("upstream tools changed", zap.Int("tools", len(exposed)))
	l.notify(exposed)
}

// filter keeps the tools the config exposes, sorted by name.
func (l *link) filter(tools []mcp.Tool) []mcp.Tool {
	l.checkFilters(tools)
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if l.cfg.ToolAllowed(t.Name) && (l.m.opts.ToolFilter == nil || l.m.opts.ToolFilter(l.name, t)) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// notify publishes the exposed tool set into the catalog and hands it to
// OnToolsChanged (nil = went down).
func (l *link) notify(tools []mcp.Tool) {
	if c := l.m.opts.Catalog; c != nil {
		c.Update(l.name, tools)
	}
	cb := l.m.opts.OnToolsChanged
	if cb == nil {
		return
	}
	var out []config.Tool
	if tools != nil {
		out = make([]config.Tool, 0, len(tools))
		for _, t := range tools {
			out = append(out, ToolFromMCP(l.name, t))
		}
	}
	defer goroutine.Recover(l.log, "OnToolsChanged callback", nil)
	cb(l.name, out)
}

// down records a failed attempt or a lost session and schedules the next
// attempt. It returns the delay until then.
func (l *link) down(err error) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.downLocked(err)
}

func (l *link) downLocked(err error) time.Duration {
	d := backoff(l.failures, l.m.minBackoff, l.m.maxBackoff, rand.Float64())
	l.failures++
	now := time.Now()
	l.lastErr = tidyError(l.m.redact.String(err.Error()))
	l.lastFail = now
	l.retryAt = now.Add(d)
	l.sess, l.tools, l.catalog = nil, nil, nil
	l.setState(StateDown)
	return d
}

// markLost takes s out of service (once, and only if it is still the live
// session): calls see the server down at once, and the supervisor tears s
// down and schedules the reconnect.
func (l *link) markLost(s *session, err error) {
	err = l.m.mask(err)
	l.mu.Lock()
	if l.sess != s {
		if s.earlyLoss == nil {
			s.earlyLoss = err // run checks it when s goes live
		}
		l.mu.Unlock()
		return
	}
	d := l.downLocked(err)
	l.mu.Unlock()
	l.log.Warn("upstream connection lost", zap.Error(err), zap.Duration("retry_in", d))
	s.lostOnce.Do(func() { close(s.lost) })
}

// sleep waits until the scheduled retry, or a call asks for an attempt now.
// It reports false when ctx ends.
func (l *link) sleep(ctx context.Context) bool {
	l.mu.Lock()
	d := time.Until(l.retryAt)
	l.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.wake:
		l.log.Info("reconnecting on demand")
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is the wait before reconnect attempt n+1 after n consecutive
// failures: min doubled n times, plus up to a quarter more as jitter (so
// servers that failed together do not retry in lockstep), capped at max.
// jitter is in [0, 1).
func backoff(failures int, min, max time.Duration, jitter float64) time.Duration {
	d := min
	for i := 0; i < failures && d < max; i++ {
		d *= 2
	}
	d += time.Duration(float64(d) / 4 * jitter)
	return clamp(d, min, max)
}

func clamp(d, lo, hi time.Duration) time.Duration {
	if d > hi {
		d = hi
	}
	if d < lo {
		d = lo
	}
	return d
}

// acquire returns the live session, waiting for an attempt in progress. A
// down server gets one reconnect attempt on demand when at least MinBackoff
// has passed since it went down; otherwise, or if that attempt fails, the
// answer is a *DownError.
func (l *link) acquire(ctx context.Context) (*session, error) {
	if l.broken != "" {
		return nil, &DownError{Server: l.name, State: StateMisconfigured, LastError: l.broken}
	}
	if !l.cfg.IsEnabled() {
		return nil, &DownError{Server: l.name, State: StateDisabled}
	}
	asked := false
	for {
		l.mu.Lock()
		switch l.state {
		case StateReady:
			s := l.sess
			l.mu.Unlock()
			return s, nil
		case StateDown, StateNeedsSignIn:
			if !asked && l.m.ctx.Err() == nil && time.Since(l.lastFail) >= l.m.minBackoff {
				asked = true
				select {
				case l.wake <- struct{}{}:
				default:
				}
				break // wait for the supervisor to pick it up
			}
			err := &DownError{Server: l.name, State: l.state, LastError: l.lastErr, RetryAt: l.retryAt}
			l.mu.Unlock()
			return nil, err
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for upstream %q to connect: %w", l.name, ctx.Err())
		}
	}
}

// isConnErr reports whether err came from the transport (the connection),
// as opposed to a JSON-RPC error the upstream answered with.
func isConnErr(err error) bool {
	var te *transport.Error
	return errors.As(err, &te)
}

// status snapshots l.
func (l *link) status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Status{Server: l.name, Transport: l.kind, State: l.state, LastError: l.lastErr, RetryAt: l.retryAt, Since: l.since}
	if !l.cfg.IsEnabled() && l.broken == "" {
		st.State = StateDisabled
	}
	if l.state == StateReady {
		st.Tools = len(l.tools)
	}
	return st
}
