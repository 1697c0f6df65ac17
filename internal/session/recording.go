package session

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"
)

// Issue 26: a call whose records cannot be written (a full disk, an I/O
// error) must never leave a silent gap in the transcript. The host keeps
// the health of its recording (the last failed write and since when it
// fails), so the front can tell the client or refuse the call, and /status
// can show it; a write that succeeds again clears it.

// ErrNotRecorded marks the error of a Record, Turn or Compress whose
// records did not reach the transcript (or, after a failed flush, may not
// be on disk): a front branches on it to tell the client so, or to refuse
// the request (config noa.on_record_error).
var ErrNotRecorded = errors.New("the session could not record it")

// notRecorded wraps a failed write as ErrNotRecorded, its message unchanged.
type notRecorded struct{ err error }

func (e notRecorded) Error() string   { return e.err.Error() }
func (e notRecorded) Unwrap() []error { return []error{ErrNotRecorded, e.err} }

// Recording is the health of a session's recording.
type Recording struct {
	// Err is the error of the last write that failed; "" while recording
	// works. Since is when the failures began (the first of a run of them).
	Err   string
	Since time.Time
}

// Failing reports whether the session's last write failed.
func (r Recording) Failing() bool { return r.Err != "" }

// health is a host's Recording, guarded by its own lock: /status reads it
// while calls hold h.mu, and a failed fsync sets it under h.smu.
type health struct {
	mu  sync.Mutex
	rec Recording
}

// note records the outcome of a write: nil clears a failure, an error
// starts one (keeping the start of a failure already going). It returns
// err wrapped as ErrNotRecorded.
func (h *Host) note(err error) error {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	if err == nil {
		h.health.rec = Recording{}
		return nil
	}
	since := h.health.rec.Since
	if since.IsZero() {
		since = h.opts.Now()
	}
	h.health.rec = Recording{Err: err.Error(), Since: since}
	if errors.Is(err, ErrNotRecorded) {
		return err
	}
	return notRecorded{err}
}

// Recording is the health of the session's recording.
func (h *Host) Recording() Recording {
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	return h.health.rec
}

// maxOpenFailures bounds the sessions a Manager remembers as failing to
// open, so a flood of ids on a broken disk cannot grow it without end.
const maxOpenFailures = 1024

// Failing is every session of the manager whose recording fails: open
// hosts whose last write failed, and sessions that could not be opened
// (their directory or files could not be created or read) since a session
// last opened. A session that failed to open may never be asked for again
// (a gateway conversation that was not recorded gets a new id), so the
// next open that succeeds, which shows the sessions directory working,
// clears them all; one that still fails shows again with its next call.
func (m *Manager) Failing() map[string]Recording {
	m.mu.Lock()
	out := make(map[string]Recording, len(m.openFailed))
	for id, r := range m.openFailed {
		out[id] = r
	}
	var hosts []*Host
	for _, e := range m.hosts {
		select {
		case <-e.ready:
			if e.h != nil {
				hosts = append(hosts, e.h)
			}
		default: // still opening
		}
	}
	m.mu.Unlock()
	for _, h := range hosts {
		if r := h.Recording(); r.Failing() {
			out[h.id] = r
		}
	}
	return out
}

// openFailure notes the failure to open session id (err set), or that a
// session opened (nil: every failure noted is cleared);
// m.mu held.
func (m *Manager) openFailure(id string, err error) {
	if err == nil {
		clear(m.openFailed)
		return
	}
	r, ok := m.openFailed[id]
	if !ok && len(m.openFailed) >= maxOpenFailures {
		return
	}
	if r.Since.IsZero() {
		r.Since = m.opts.Now()
	}
	r.Err = err.Error()
	m.openFailed[id] = r
}

// UnrecordedNote is what a front adds to the answer of a call its session
// could not record (err says why): the call ran, and the model learns that
// nothing can recall it. refusing is noa.on_record_error "refuse" (under
// which a call still gets the note when its result could not be recorded,
// or when it only reads mcproxy's own catalogue or archives).
func UnrecordedNote(err error, refusing bool) string {
	policy := fmt.Sprintf("config noa.on_record_error is %q; %q refuses calls while they cannot be recorded", "report", "refuse")
	if refusing {
		policy = fmt.Sprintf("config noa.on_record_error is %q: a call to a tool behind mcproxy that cannot be recorded is refused before it runs", "refuse")
	}
	return fmt.Sprintf("[mcproxy] This call ran, but the session could not record it (%s): it is missing from the session's transcript, "+
		"and read_archive and Compress cannot cover it. The call itself is unaffected; keep what you need from this result in your own words. (%s.)", Reason(err), policy)
}

// RefusedNote is a front's answer to a call refused before it ran because
// its session cannot record it (err says why), with noa.on_record_error
// "refuse".
func RefusedNote(err error) string {
	return fmt.Sprintf("[mcproxy] Call refused before it ran: the session cannot record it (%s), and config noa.on_record_error is %q, "+
		"so nothing was sent to the tool. Calling again later is safe: each call tries to record again, and calls run as soon as that works. "+
		"The operator can free space for mcproxy's data_dir, or set noa.on_record_error to %q to run calls unrecorded.", Reason(err), "refuse", "report")
}

// Reason is the short cause of a failed write, for a model (or a client's
// header) to read: the system's error ("no space left on device"), never
// the paths around it, which name the session's directory; without one,
// where the details are.
func Reason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, ErrClosed):
		return "the session is closed"
	}
	return "a storage error; mcproxy's log and /status have the details"
}
