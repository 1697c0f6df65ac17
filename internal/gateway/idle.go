package gateway

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/session"
)

// idleHosts remembers when each conversation's host was last used, so
// SessionHosts can release the hosts of conversations nobody continues:
// a released host closes its files; the conversation's next request
// restores it from disk.
type idleHosts struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// touch records a use of conversation id at now.
func (i *idleHosts) touch(id string, now time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.last == nil {
		i.last = map[string]time.Time{}
	}
	i.last[id] = now
}

// takeIdle forgets and returns the conversations last used before cutoff.
func (i *idleHosts) takeIdle(cutoff time.Time) []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []string
	for id, t := range i.last {
		if t.Before(cutoff) {
			out = append(out, id)
			delete(i.last, id)
		}
	}
	return out
}

// ReleaseIdle releases the host of every conversation not used (no Host,
// Peek, Record, Turn, Compress or read_archive) since idle before now, and
// returns how many. Since every host call marks its conversation used, only
// a request that waits longer than idle between two of them (a model answer
// slower than session_idle_timeout) can find its host closed: that request
// fails with a closed-session error, and the next one restores the
// conversation from disk.
func (s *SessionHosts) ReleaseIdle(now time.Time, idle time.Duration) int {
	ids := s.idle.takeIdle(now.Add(-idle))
	for _, id := range ids {
		if err := s.Sessions.Release(id); err != nil && s.Logger != nil {
			s.Logger.Warn("releasing an idle conversation's session", zap.String("session_id", id), zap.Error(err))
		}
	}
	return len(ids)
}

// RunIdle releases idle conversations' hosts (ReleaseIdle) every quarter
// of idle until ctx ends (session.SweepIdle). A zero or negative idle
// releases nothing.
func (s *SessionHosts) RunIdle(ctx context.Context, idle time.Duration) {
	session.SweepIdle(ctx, idle, s.Logger, func(now time.Time) {
		if n := s.ReleaseIdle(now, idle); n > 0 && s.Logger != nil {
			s.Logger.Info("released idle conversations", zap.Int("conversations", n), zap.Duration("session_idle_timeout", idle))
		}
	})
}
