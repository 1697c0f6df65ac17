package learn

import (
	"sync"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// A lesson costs a write of the store (an atomic replace, with its fsyncs)
// and a re-index of the tool's server, a few milliseconds that a tool call
// has no reason to wait for. CalledLater therefore follows the episode at
// once and hands the lesson to the Learner's worker; Refresh, which runs
// before every search, waits for the lessons still pending, so a search
// never misses a lesson taught by a call answered before it began.

// lesson is a teaching call waiting for the worker.
type lesson struct {
	tool    string
	queries []string
}

// later is the Learner's worker and what it has pending.
type later struct {
	once sync.Once
	// smu guards sending to jobs against Close closing it; senders hold
	// it for reading, the worker never takes it.
	smu     sync.RWMutex
	stopped bool
	jobs    chan lesson
	done    chan struct{}
	// mu guards pending, the lessons queued or being taught; idle is
	// signalled when it drops to zero.
	mu      sync.Mutex
	idle    *sync.Cond
	pending int
}

// CalledLater is Called with the lesson, if the call teaches one, taught
// by the Learner's worker instead of on the caller's path. After Close it
// teaches at once.
func (l *Learner) CalledLater(session, tool string, ok bool) {
	queries := l.Episodes.Called(session, tool, ok)
	if len(queries) == 0 {
		return
	}
	w := &l.later
	w.smu.RLock()
	defer w.smu.RUnlock()
	if w.stopped {
		l.teach(tool, queries)
		return
	}
	w.once.Do(func() {
		w.idle = sync.NewCond(&w.mu)
		w.jobs, w.done = make(chan lesson, 64), make(chan struct{})
		goroutine.Go(l.logger(), "learner", l.work)
	})
	w.mu.Lock()
	w.pending++
	w.mu.Unlock()
	w.jobs <- lesson{tool: tool, queries: queries}
}

// work teaches the lessons handed to it until Close.
func (l *Learner) work() {
	w := &l.later
	defer close(w.done)
	for j := range w.jobs {
		l.teachSafely(j)
		w.mu.Lock()
		w.pending--
		if w.pending == 0 {
			w.idle.Broadcast()
		}
		w.mu.Unlock()
	}
}

// teachSafely teaches one lesson; a panic is logged, and the worker goes
// on with the next.
func (l *Learner) teachSafely(j lesson) {
	defer goroutine.Recover(l.logger().With(zap.String("tool", j.tool)), "learner (the lesson is dropped)", nil)
	l.teach(j.tool, j.queries)
}

// settle waits until no lesson is pending.
func (l *Learner) settle() {
	w := &l.later
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.pending > 0 {
		w.idle.Wait()
	}
}

// Close teaches the lessons still pending and stops the worker; later
// calls teach at once. Close the Learner before its index.
func (l *Learner) Close() {
	w := &l.later
	w.smu.Lock()
	if !w.stopped {
		w.stopped = true
		if w.jobs != nil {
			close(w.jobs)
		}
	}
	w.smu.Unlock()
	if w.done != nil {
		<-w.done
	}
}
