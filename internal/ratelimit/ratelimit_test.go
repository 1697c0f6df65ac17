package ratelimit

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// N calls per second hold for one token under 8 concurrent callers, and
// another token is unaffected.
func TestRateUnderConcurrency(t *testing.T) {
	ls := New()
	a := Limit{Subject: "client token a", ConfigKey: "profiles.p.rate_limit", Config: config.RateLimitConfig{CallsPerSecond: 10, Burst: 10}}
	b := Limit{Subject: "client token b", ConfigKey: "profiles.p.rate_limit", Config: a.Config}
	var allowed, refused, otherRefused atomic.Int64
	// 3 seconds in steps of 10ms; at each step 8 goroutines call once on a
	// and once on b, b only at 1 call per step.
	for step := range 300 {
		now := t0.Add(time.Duration(step) * 10 * time.Millisecond)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				rel, err := ls.Acquire(a, now)
				if err != nil {
					var re *RefusedError
					if !errors.As(err, &re) || re.Concurrency || re.RetryAfter <= 0 {
						t.Errorf("refusal %v", err)
					}
					refused.Add(1)
					return
				}
				allowed.Add(1)
				rel()
			})
		}
		wg.Wait()
		if step%10 == 0 { // b: 1 call per 100ms, well under its limit
			rel, err := ls.Acquire(b, now)
			if err != nil {
				otherRefused.Add(1)
			} else {
				rel()
			}
		}
	}
	// 3s at 10/s plus the burst of 10, give or take the last step.
	if got := allowed.Load(); got < 39 || got > 41 {
		t.Errorf("allowed %d calls in 3s at 10/s with burst 10, want 40", got)
	}
	if refused.Load() != 2400-allowed.Load() {
		t.Errorf("refused %d, allowed %d of 2400", refused.Load(), allowed.Load())
	}
	if otherRefused.Load() != 0 {
		t.Errorf("the other token was refused %d times", otherRefused.Load())
	}
}

func TestConcurrencyCap(t *testing.T) {
	ls := New()
	l := Limit{Subject: "upstream github", ConfigKey: "mcpServers.github.rate_limit", Config: config.RateLimitConfig{MaxConcurrent: 2}}
	r1, err1 := ls.Acquire(l, t0)
	r2, err2 := ls.Acquire(l, t0)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := ls.Acquire(l, t0)
	var re *RefusedError
	if !errors.As(err, &re) || !re.Concurrency {
		t.Fatalf("third call: %v", err)
	}
	want := "upstream github has 2 calls in flight, its limit (mcpServers.github.rate_limit.max_concurrent): retry when one finishes"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
	r1()
	r1() // a second release frees nothing more
	r3, err := ls.Acquire(l, t0)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if _, err := ls.Acquire(l, t0); err == nil {
		t.Error("a double release freed two places")
	}
	r2()
	r3()
}

func TestRateError(t *testing.T) {
	ls := New()
	l := Limit{Subject: "client token bot", ConfigKey: "profiles.review.rate_limit", Config: config.RateLimitConfig{CallsPerSecond: 2}}
	for i := range 2 {
		if _, err := ls.Acquire(l, t0); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := ls.Acquire(l, t0)
	want := "client token bot is over its rate limit of 2 calls per second, burst 2 (profiles.review.rate_limit.calls_per_second): retry in 500ms"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
	// A refused call takes nothing: after 500ms exactly one more is allowed.
	if _, err := ls.Acquire(l, t0.Add(500*time.Millisecond)); err != nil {
		t.Errorf("after the retry delay: %v", err)
	}
	if _, err := ls.Acquire(l, t0.Add(500*time.Millisecond)); err == nil {
		t.Error("two calls allowed after one interval")
	}
	// A changed limit starts afresh.
	l.Config.CallsPerSecond = 100
	if _, err := ls.Acquire(l, t0.Add(500*time.Millisecond)); err != nil {
		t.Errorf("after raising the limit: %v", err)
	}
	ls.Forget(l.Subject)
	if _, err := New().Acquire(Limit{}, t0); err != nil {
		t.Errorf("the zero limit refused: %v", err)
	}
}
