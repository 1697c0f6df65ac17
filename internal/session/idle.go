package session

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// SweepIdle calls sweep every quarter of idle (at least every second, at
// most every minute) until ctx ends: the loop behind releasing the hosts of
// sessions idle for longer than idle (session_idle_timeout), for the MCP
// front's client sessions and the gateway's conversations alike. A zero or
// negative idle sweeps nothing. A panic in one sweep is logged to log and
// the loop goes on with the next (before, one panic stopped idle release
// for the life of the process).
func SweepIdle(ctx context.Context, idle time.Duration, log *zap.Logger, sweep func(now time.Time)) {
	if idle <= 0 {
		return
	}
	<-goroutine.Loop(ctx, log, "idle session sweep", min(max(idle/4, time.Second), time.Minute), sweep)
}
