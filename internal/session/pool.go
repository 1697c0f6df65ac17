package session

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// DefaultMaxOpen is how many of a Manager's hosts keep their files open
// at once (Options.MaxOpen).
const DefaultMaxOpen = 64

// A host holds two descriptors while it is open: its transcript, appended
// to, and its lock. A Manager may hold thousands of sessions (clients that
// went away without ending theirs, before the idle timeout ends them), so
// it keeps only the MaxOpen most recently written hosts' files open; the
// others are parked: every record on disk, transcript closed, lock
// dropped. A parked host still answers from memory (turns, archives); its
// next write takes the lock again and reopens the transcript (unpark).

// openPool is a Manager's list of unparked hosts, most recently written
// first, and the goroutine that parks those beyond its size.
type openPool struct {
	max int
	log *zap.Logger

	mu    sync.Mutex
	order *list.List              // of *Host, front = most recent
	at    map[*Host]*list.Element // position of each host in order
	park  chan *Host              // hosts to park, for the parker
	// saves are hosts whose state.json is due (checkpoint.go).
	saves chan *Host
	// flushEvery is Options.FlushEvery; unflushed are the hosts whose
	// records were answered before their flush (committed), for the next
	// periodic one. armed tells run to start the flush's timer: the first
	// host marked after a flush sends on it, so an idle pool sets no timer.
	flushEvery time.Duration
	unflushed  map[*Host]bool
	armed      chan struct{}
}

func newOpenPool(max int, flushEvery time.Duration, log *zap.Logger) *openPool {
	if max <= 0 {
		max = DefaultMaxOpen
	}
	return &openPool{max: max, log: log, order: list.New(), at: map[*Host]*list.Element{}, park: make(chan *Host, 256), saves: make(chan *Host, 256),
		flushEvery: flushEvery, unflushed: map[*Host]bool{}, armed: make(chan struct{}, 1)}
}

// dirty marks h for the next periodic flush, which comes at most
// flushEvery after the first host marked since the last one (committed;
// it never blocks on a flush).
func (p *openPool) dirty(h *Host) {
	p.mu.Lock()
	first := len(p.unflushed) == 0
	p.unflushed[h] = true
	p.mu.Unlock()
	if first {
		select {
		case p.armed <- struct{}{}:
		default: // already asked for
		}
	}
}

// flush makes the records of every host marked dirty durable. A host
// parked or closed meanwhile flushed them itself (durable finds nothing to
// do).
func (p *openPool) flush() {
	p.mu.Lock()
	hosts := p.unflushed
	p.unflushed = map[*Host]bool{}
	p.mu.Unlock()
	for h := range hosts {
		if err := h.durable(h.written.Load()); err != nil {
			p.log.Error("flushing a session's transcript; it records nothing more until it is reopened", zap.String("session_id", h.id), zap.Error(err))
		}
	}
}

// used moves h to the front; the hosts pushed beyond max are handed to the
// parker. It never takes a host's lock (callers hold h.mu), and it never
// blocks: when the parker is behind, the extra hosts wait for the next use.
func (p *openPool) used(h *Host) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.at[h]; ok {
		p.order.MoveToFront(e)
	} else {
		p.at[h] = p.order.PushFront(h)
	}
	for p.order.Len() > p.max {
		victim := p.order.Back().Value.(*Host)
		select {
		case p.park <- victim:
		default:
			return
		}
		p.order.Remove(p.at[victim])
		delete(p.at, victim)
	}
}

// checkpoint queues h for a write of its state.json (h.mu held, so it
// never blocks); false when the queue is full.
func (p *openPool) checkpoint(h *Host) bool {
	select {
	case p.saves <- h:
		return true
	default:
		return false
	}
}

// forget drops h from the pool (it is being closed).
func (p *openPool) forget(h *Host) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.unflushed, h)
	if e, ok := p.at[h]; ok {
		p.order.Remove(e)
		delete(p.at, h)
	}
}

// run parks the hosts handed to it, writes the state.json checkpoints
// queued and, with flushEvery, flushes the transcripts answered before
// their flush, until stop is closed.
func (p *openPool) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// The flush's timer runs only while some host waits for it.
	var timer *time.Timer
	var due <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// A panic in one step (a flush, a park, a checkpoint) is logged and the
	// loop goes on: parking and state.json must not stop for the process's
	// life because of one session.
	safely := func(f func()) {
		defer goroutine.Recover(p.log, "session pool", nil)
		f()
	}
	for {
		select {
		case <-stop:
			safely(p.flush)
			return
		case <-p.armed:
			if due == nil {
				timer = time.NewTimer(p.flushEvery)
				due = timer.C
			}
		case <-due:
			due = nil
			safely(p.flush)
		case h := <-p.park:
			safely(func() {
				if err := h.park(); err != nil {
					p.log.Warn("parking an idle session (closing its files)", zap.String("session_id", h.id), zap.Error(err))
				}
			})
		case h := <-p.saves:
			safely(func() {
				if err := h.checkpoint(); err != nil {
					// The transcript holds every turn; Open brings state.json
					// forward.
					p.log.Warn("writing state.json", zap.String("session_id", h.id), zap.Error(err))
				}
			})
		}
	}
}

// park makes every record durable, writes state.json if it is behind, and
// closes the transcript and the lock. Nothing is lost: the next write
// reopens them (unpark).
func (h *Host) park() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.tr == nil {
		return nil
	}
	var errs []error
	if h.stateSeq != h.seq {
		errs = append(errs, h.saveState())
	}
	if err := h.durable(h.trSize); err != nil {
		// Not durable: keep the files, as a failed fsync stops the session
		// anyway (syncErr).
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, h.trimReserve())
	h.smu.Lock()
	errs = append(errs, h.tr.Close())
	h.tr = nil
	h.smu.Unlock()
	errs = append(errs, h.lock.release())
	h.lock = nil
	return errors.Join(errs...)
}

// unpark reopens a parked host's files before a write (h.mu held): the
// lock first, then a check that nobody changed the transcript meanwhile
// (another process, such as `mcproxy sessions rebuild`, may have held the
// lock), then the transcript. It tells the pool of the use.
func (h *Host) unpark() error {
	if h.tr != nil {
		if h.pool != nil {
			h.pool.used(h)
		}
		return nil
	}
	lock, err := lockSession(h.dir, h.id)
	if err != nil {
		return fmt.Errorf("reopening session %s: %w", h.id, err)
	}
	st, err := os.Stat(h.path(TranscriptFile))
	switch {
	case err != nil && !(errors.Is(err, os.ErrNotExist) && h.trSize == 0):
		err = fmt.Errorf("reopening session %s: %w", h.id, err)
	case err == nil && st.Size() != h.trAlloc: // trSize, unless trimming the reserve failed
		err = fmt.Errorf("reopening session %s: its transcript changed on disk while it was idle (%d bytes, %d expected); another process wrote it, so this one records nothing more until the session is opened again", h.id, st.Size(), h.trAlloc)
		h.broken = err
	default:
		err = nil
	}
	if err != nil {
		_ = lock.release()
		return err
	}
	tr, err := h.opts.FS.OpenLog(h.path(TranscriptFile))
	if err != nil {
		_ = lock.release()
		return fmt.Errorf("reopening session %s: %w", h.id, err)
	}
	h.smu.Lock()
	h.tr = tr
	h.smu.Unlock()
	h.lock = lock
	if h.pool != nil {
		h.pool.used(h)
	}
	return nil
}
