package session

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// Manager owns the hosts of a running proxy, one per session id (an MCP
// client session, a gateway conversation). Hosts are opened on first use
// (an id seen before is restored from disk) and kept until Release or
// Close. Sessions share nothing but the options: each has its own
// directory, lock, refs, blocks and archives. Opening a session that has a
// long transcript to replay holds up only that session.
type Manager struct {
	opts Options

	// fetchMu serialises bringing working copies up to the Store.
	fetchMu sync.Mutex

	mu     sync.Mutex
	hosts  map[string]*entry
	closed bool
	// openFailed are the sessions whose last open failed (recording.go).
	openFailed map[string]Recording

	// stop and done end the retention goroutine (nil without retention).
	stop, done chan struct{}
	// pool keeps the files of at most Options.MaxOpen hosts open; its
	// parker goroutine ends with parkStop.
	pool               *openPool
	parkStop, parkDone chan struct{}
}

// entry is one session's host, opened once.
type entry struct {
	ready chan struct{} // closed once h and err are set
	h     *Host
	err   error
}

// NewManager returns a manager creating hosts with opts. With a positive
// opts.Retention it also removes old sessions (see Prune) at once and every
// RetentionInterval, in a goroutine that Close stops; the sessions it holds
// open are never removed.
func NewManager(opts Options) *Manager {
	m := &Manager{opts: opts.withDefaults(), hosts: map[string]*entry{}, openFailed: map[string]Recording{}}
	m.pool = newOpenPool(m.opts.MaxOpen, m.opts.FlushEvery, m.opts.Logger)
	m.parkStop, m.parkDone = make(chan struct{}), make(chan struct{})
	goroutine.Go(m.opts.Logger, "session pool", func() { m.pool.run(m.parkStop, m.parkDone) })
	if m.opts.Retention > 0 {
		every := RetentionInterval
		if m.opts.pruneEvery > 0 {
			every = m.opts.pruneEvery
		}
		m.stop, m.done = make(chan struct{}), make(chan struct{})
		goroutine.Go(m.opts.Logger, "session retention", func() { m.retain(m.stop, m.done, every) })
	}
	return m
}

// Host returns the host of session id, opening (or creating) it on first
// use. Concurrent first uses of one id open it once.
func (m *Manager) Host(id string) (*Host, error) { return m.HostWith(id, HostOptions{}) }

// HostWith is Host with per-host options (see HostOptions), used when this
// call opens the session; a host already open is returned as it was opened.
// The gateway opens each conversation's host this way, with its model's
// context window and emergency truncation on.
func (m *Manager) HostWith(id string, ho HostOptions) (*Host, error) {
	if m.opts.Store != nil {
		if err := m.current(id); err != nil {
			return nil, notRecorded{err}
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := m.hosts[id]
	if !ok {
		e = &entry{ready: make(chan struct{})}
		m.hosts[id] = e
	}
	m.mu.Unlock()
	if ok {
		<-e.ready
		return e.h, e.err
	}
	e.h, e.err = OpenWith(m.opts, id, ho)
	if e.err != nil {
		e.err = notRecorded{e.err} // what the session's calls would have recorded is lost
	}
	if e.err == nil {
		e.h.mu.Lock()
		e.h.pool = m.pool
		m.pool.used(e.h)
		e.h.mu.Unlock()
	}
	m.mu.Lock()
	m.openFailure(id, e.err)
	switch {
	case e.err != nil:
		delete(m.hosts, id) // a later call may try again
	case m.closed:
		// Close ran while this session was opening; it must not leak.
		e.h.Close()
		e.h, e.err = nil, ErrClosed
	}
	m.mu.Unlock()
	close(e.ready)
	return e.h, e.err
}

// Live is what an open session holds now. state.json is written at turns
// and on close, so a status page reading the files alone lags behind a
// session in use (issue 30: live sessions showed 0 messages).
type Live struct {
	// Messages is how many messages the session has recorded.
	Messages int
}

// Live reports every session open in m, by id; sessions still opening are
// left out.
func (m *Manager) Live() map[string]Live {
	m.mu.Lock()
	hosts := make([]*Host, 0, len(m.hosts))
	for _, e := range m.hosts {
		select {
		case <-e.ready:
			if e.h != nil {
				hosts = append(hosts, e.h)
			}
		default:
		}
	}
	m.mu.Unlock()
	out := make(map[string]Live, len(hosts))
	for _, h := range hosts {
		h.mu.Lock()
		out[h.id] = Live{Messages: len(h.msgs)}
		h.mu.Unlock()
	}
	return out
}

// Release closes the host of session id (when the client's session or the
// conversation ends).
// Its files stay; a later Host(id) restores it.
func (m *Manager) Release(id string) error {
	m.mu.Lock()
	e, ok := m.hosts[id]
	delete(m.hosts, id)
	delete(m.openFailed, id)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	<-e.ready
	if e.h == nil {
		return nil
	}
	return e.h.Close()
}

// Close closes every host; later calls to Host fail with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	entries := m.hosts
	m.hosts = map[string]*entry{}
	wasClosed := m.closed
	m.closed = true
	m.mu.Unlock()
	if m.stop != nil && !wasClosed {
		close(m.stop)
		<-m.done
	}
	if !wasClosed {
		close(m.parkStop)
		<-m.parkDone
	}
	var errs []error
	for _, e := range entries {
		<-e.ready
		if e.h != nil {
			errs = append(errs, e.h.Close())
		}
	}
	return errors.Join(errs...)
}

// NewSessionID returns a fresh session id for a connection that has none of
// its own (stdio, whose mcp-go session id is the constant "stdio"): the UTC
// start time, so `sessions list` sorts and reads naturally, and 8 random hex
// digits, so two proxies started in the same second do not share a session.
func NewSessionID(now time.Time) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to
		// the clock's nanoseconds rather than to a shared id.
		binary.BigEndian.PutUint32(b[:], uint32(now.UnixNano()))
	}
	return "stdio-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// RecallOnly reports whether the manager's hosts serve a front that keeps
// only size cuts and recall (Options.RecallOnly).
func (m *Manager) RecallOnly() bool { return m.opts.RecallOnly }

// RefuseUnrecorded reports whether the manager's front refuses calls its
// sessions cannot record (Options.RefuseUnrecorded).
func (m *Manager) RefuseUnrecorded() bool { return m.opts.RefuseUnrecorded }

// Exists reports whether session id has been created: open in this manager,
// or a directory under Options.Dir. It creates nothing.
func (m *Manager) Exists(id string) bool {
	if !ValidSessionID(id) {
		return false
	}
	m.mu.Lock()
	_, open := m.hosts[id]
	m.mu.Unlock()
	if open {
		return true
	}
	if m.opts.Store != nil {
		ctx, cancel := storeCtx()
		defer cancel()
		_, ok, err := m.opts.Store.Head(ctx, id)
		return err == nil && ok
	}
	_, err := os.Stat(filepath.Join(m.opts.Dir, id))
	return err == nil
}

// current brings the working copy of session id up to the Store (Options.
// Store set): a host open here that is behind it (another replica wrote
// the session since) is closed, and the directory is brought up to date
// (fetch), so the host HostWith opens next holds every record, archive and
// the state the store does. A session the store does not hold is new: a
// copy left here (a session pruned from the store) is removed.
func (m *Manager) current(id string) error {
	if !ValidSessionID(id) {
		return nil // OpenWith says what is wrong with it
	}
	ctx, cancel := storeCtx()
	defer cancel()
	head, ok, err := m.opts.Store.Head(ctx, id)
	if err != nil {
		return fmt.Errorf("opening session %s: %w", id, err)
	}
	m.mu.Lock()
	e, open := m.hosts[id]
	m.mu.Unlock()
	if open {
		<-e.ready
		if h := e.h; h != nil {
			h.mu.Lock()
			// Read after Head: a batch this host stored since is
			// counted in h.seq, so only another replica's makes head
			// larger.
			behind := head > h.seq || errors.Is(h.broken, ErrStale)
			h.mu.Unlock()
			if !behind {
				return nil
			}
		}
		if err := m.Release(id); err != nil {
			m.opts.Logger.Warn("closing a session another replica moved on", zap.String("session_id", id), zap.Error(err))
		}
	}
	m.fetchMu.Lock()
	defer m.fetchMu.Unlock()
	dir := filepath.Join(m.opts.Dir, id)
	if !ok {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("opening session %s: removing a copy the store no longer holds: %w", id, err)
		}
		return nil
	}
	return fetch(ctx, m.opts.Store, m.opts.FS, dir, id, head, m.opts.Logger)
}
