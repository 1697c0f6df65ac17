package session

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// SweepIdle calls sweep every quarter of idle (at least every second, at
// most every minute) until ctx ends: the loop behind releasing the hosts of
// sessions idle for longer than idle (session_idle_timeout), for the MCP
// front's client sessions and the gateway's conversations alike. A zero or
// negative idle sweeps nothing. A panic in sweep is logged to log and ends
// the loop.
func SweepIdle(ctx context.Context, idle time.Duration, log *zap.Logger, sweep func(now time.Time)) {
	if idle <= 0 {
		return
	}
	defer func() {
		if p := recover(); p != nil && log != nil {
			log.Error("panic in the idle session sweep; idle sessions are no longer released", zap.Any("panic", p), zap.Stack("stack"))
		}
	}()
	t := time.NewTicker(min(max(idle/4, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sweep(now)
		}
	}
}
