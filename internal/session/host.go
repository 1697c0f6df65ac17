package session

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Host is one session's noa host. Its methods are safe for concurrent use;
// what they record is serialised, in the order the calls take the lock.
//
// The work is split by file: open.go restores a session from disk,
// record.go appends to the stream, turn.go runs noa over it, cut.go cuts
// oversize texts, compress.go applies Compress, readarchive.go answers
// read_archive.
type Host struct {
	id, dir string
	opts    Options
	cfg     noa.Config
	arch    *Archiver
	count   *memo
	log     *zap.Logger

	mu        sync.Mutex
	msgs      []noa.CoreMessage
	index     map[string]int    // message id -> position in msgs
	originals map[string]string // message id -> archived full text
	reserved  map[string]string // tool call id -> id kept for its result
	total     int               // tokens of every recorded message
	engaged   bool              // Engage was recorded
	// eng is noa over the stream, incrementally: it holds the state
	// (refs, blocks, pacing). blocks and refs (ref -> message id) are the
	// host's copies of what read_archive looks up, kept in step with it.
	eng      *noa.Engine
	blocks   []noa.CompressionBlock
	refs     map[string]string
	refNext  int // the index of the next ref the engine will give
	refSeen  int // messages whose refs are in refs
	verify   *verifier
	seq      int64 // last record written
	stateSeq int64 // record state.json reflects
	nextID   int   // message and call numbering
	tr       LogFile
	lock     *dirLock // held from Open to Close
	trSize   int64    // where the records end (the next one's offset)
	// trAlloc is where the transcript file ends on disk: trSize plus the
	// zeroed reserve written ahead (trfile.go); trSize when there is none.
	trAlloc int64
	// broken is set when a failed append could not be cut back off the
	// transcript: appending after the stray bytes would corrupt a record,
	// so nothing more is written until they are cut (stray: each later
	// append tries the cut again, so a disk that recovers lets the session
	// record again) or the session is reopened (which drops them as a
	// torn tail). Set without stray (another process wrote the
	// transcript, unpark), only a reopen clears it.
	broken  error
	stray   bool
	unsaved int // turns since state.json was written
	// saving is set while a checkpoint of this host waits in its pool
	// (checkpoint.go); guarded by h.mu.
	saving bool
	// wmu orders the writes of state.json; stateOnDisk is the record the
	// file last written reflects (both guarded by wmu). A checkpoint
	// written off the call path never replaces a newer one.
	wmu         sync.Mutex
	stateOnDisk int64
	// written is trSize, readable without h.mu. smu guards the group
	// commit (durable): syncedTo is the transcript offset known to be on
	// disk; syncErr a failed fsync, which stops the session's recording.
	written  atomic.Int64
	smu      sync.Mutex
	syncedTo int64
	syncErr  atomic.Pointer[error]
	report   Report
	closed   bool
	// health is whether the last write succeeded (recording.go).
	health health
	// pool is the Manager's pool of open hosts (nil for a host opened on
	// its own): tr and lock are nil while the host is parked (pool.go).
	pool *openPool
	// rulesSent maps a tier to the ref its rules were sent with over MCP
	// (MCPNudge); guarded by nudgeMu.
	nudgeMu   sync.Mutex
	rulesSent map[noa.Tier]string
}

// Report is what Open found and repaired.
type Report struct {
	// Records is how many transcript records were read.
	Records int
	// TornTail is set when a record cut short by a crash was dropped from
	// the end of the transcript.
	TornTail bool
	// StateMissing, StateBehind and StateMismatch describe state.json:
	// absent, older than the transcript, or different from what the
	// transcript rebuilds at the same point. In every case the state is
	// taken from the transcript and state.json is rewritten.
	StateMissing, StateBehind, StateMismatch bool
	// Replayed and Skipped count Compress calls replayed from the
	// transcript and recorded calls that had created nothing.
	Replayed, Skipped int
	// OrphanArchives are archive files no block points at (left by a
	// Compress interrupted before it was recorded).
	OrphanArchives []string
	// MissingArchives are archives of recorded blocks that are not on disk.
	MissingArchives []string
	Warnings        []string
}

// ErrClosed is returned by a Host used after Close.
var ErrClosed = errors.New("session is closed")

// ErrNotOwned is the error of opening, with HostOptions.OnlyOwn, a session
// created without a HostConfigFile (an MCP client's).
var ErrNotOwned = errors.New("the session was not created by the model gateway (it has no " + HostConfigFile + "), so the gateway does not open it")

// ID is the session id.
func (h *Host) ID() string { return h.id }

// Dir is the session directory.
func (h *Host) Dir() string { return h.dir }

// Report is what Open found and repaired.
func (h *Host) Report() Report { return h.report }

// State returns a copy of the current noa state: O(n).
func (h *Host) State() noa.CompressionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.eng.State()
}

// Has reports whether a message with this id is recorded: how a front that
// is sent the whole conversation each time (the gateway) finds the messages
// that are new, also after a restart.
func (h *Host) Has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.recorded(id)
}

// recorded is Has for a caller holding h.mu.
func (h *Host) recorded(id string) bool {
	_, ok := h.index[id]
	return ok
}

// Messages returns a copy of the recorded message stream.
func (h *Host) Messages() []noa.CoreMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]noa.CoreMessage(nil), h.msgs...)
}

// Close writes state.json if it is behind, closes the transcript and
// releases the session's lock.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	if h.stateSeq != h.seq {
		// Messages recorded since the last turn (a call whose result never
		// came) get their refs as a rebuild gives them (State syncs).
		errs = append(errs, h.saveState())
	}
	// Every record is on disk before the transcript closes; a call still
	// waiting for its fsync then finds it done.
	errs = append(errs, h.durable(h.trSize))
	h.smu.Lock()
	if h.tr != nil { // nil: parked, every record already on disk
		errs = append(errs, h.trimReserve(), h.tr.Close())
		h.tr = nil // a late periodic flush finds nothing to do (durable)
	}
	h.smu.Unlock()
	errs = append(errs, h.lock.release()) // last: every write is done
	if h.pool != nil {
		h.pool.forget(h)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing session %s: %w", h.id, err)
	}
	return nil
}

// begin takes the lock for a change, unless ctx has ended or the host is
// closed; the caller unlocks.
func (h *Host) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// saveState writes state.json atomically.
func (h *Host) saveState() error {
	// Transcript, then state: state.json never reflects a record that is
	// not on disk.
	if err := h.durable(h.trSize); err != nil {
		return fmt.Errorf("saving state: %w", err)
	}
	b, err := encodeState(h.seq, h.eng.State())
	if err != nil {
		return err
	}
	if err := h.writeState(h.seq, b, false); err != nil {
		return err
	}
	h.stateSeq = h.seq
	h.unsaved = 0
	return nil
}

// path is a file of the session directory.
func (h *Host) path(name string) string { return filepath.Join(h.dir, name) }
