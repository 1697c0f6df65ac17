// Package ratelimit owns the per-client and per-upstream call limits: a
// token bucket (golang.org/x/time/rate) and a cap on calls in flight for
// each subject (a client token, an upstream server), configured by a
// config.RateLimitConfig. Each refusal is a *RefusedError naming the
// subject, the limit, its config key and when to retry. It reads no clock:
// callers pass the time.
package ratelimit

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Limit is one subject's limit.
type Limit struct {
	// Subject names who is limited, as errors say it: "client token
	// review-bot", "upstream github".
	Subject string
	// ConfigKey is the path of the config object that sets it:
	// "profiles.review.rate_limit", "mcpServers.github.rate_limit".
	ConfigKey string
	// Config is the limit; the zero value limits nothing.
	Config config.RateLimitConfig
}

// RefusedError is a call refused by a limit.
type RefusedError struct {
	Limit Limit
	// Concurrency is true when the cap on calls in flight refused the
	// call, false when the rate did.
	Concurrency bool
	// RetryAfter is how long until the rate allows a call; zero for a
	// concurrency refusal (retry when a call in flight finishes).
	RetryAfter time.Duration
}

func (e *RefusedError) Error() string {
	c := e.Limit.Config
	if e.Concurrency {
		return fmt.Sprintf("%s has %d calls in flight, its limit (%s.max_concurrent): retry when one finishes, or raise the limit in the config",
			e.Limit.Subject, c.MaxConcurrent, e.Limit.ConfigKey)
	}
	return fmt.Sprintf("%s is over its rate limit of %g calls per second, burst %d (%s.calls_per_second): retry in %s, or raise the limit in the config",
		e.Limit.Subject, c.CallsPerSecond, burst(c), e.Limit.ConfigKey, e.RetryAfter.Round(time.Millisecond))
}

// Limits holds the state of every subject's limits. The zero value is
// not usable; call New. It is safe for concurrent use.
type Limits struct {
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	cfg      config.RateLimitConfig
	bucket   *rate.Limiter // nil without a rate
	inFlight int
}

// New returns empty limits.
func New() *Limits { return &Limits{entries: map[string]*entry{}} }

func burst(c config.RateLimitConfig) int {
	if c.Burst > 0 {
		return c.Burst
	}
	return max(1, int(math.Ceil(c.CallsPerSecond)))
}

// Acquire takes one call's place under l at now: on success the caller
// must call release once when the call ends. A limit whose config changed
// since the subject was last seen starts afresh.
func (ls *Limits) Acquire(l Limit, now time.Time) (release func(), err error) {
	if l.Config.IsZero() {
		return func() {}, nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	e := ls.entries[l.Subject]
	if e == nil || e.cfg != l.Config {
		e = &entry{cfg: l.Config}
		if old := ls.entries[l.Subject]; old != nil {
			e.inFlight = old.inFlight
		}
		if l.Config.CallsPerSecond > 0 {
			e.bucket = rate.NewLimiter(rate.Limit(l.Config.CallsPerSecond), burst(l.Config))
		}
		ls.entries[l.Subject] = e
	}
	if l.Config.MaxConcurrent > 0 && e.inFlight >= l.Config.MaxConcurrent {
		return nil, &RefusedError{Limit: l, Concurrency: true}
	}
	if e.bucket != nil {
		r := e.bucket.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			return nil, &RefusedError{Limit: l, RetryAfter: d}
		}
	}
	e.inFlight++
	var once sync.Once
	return func() {
		once.Do(func() {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			if cur := ls.entries[l.Subject]; cur != nil && cur.inFlight > 0 {
				cur.inFlight--
			}
		})
	}, nil
}

// Forget drops a subject's state (a revoked token's).
func (ls *Limits) Forget(subject string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	delete(ls.entries, subject)
}
