package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// A panic in one progress report must not end the reports: the next tick
// still says which server is connecting (before, the recovery sat outside
// the loop, so one panic silenced progress for the rest of the command).
func TestProgressSurvivesAPanickingReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.ErrorLevel)
		var out lockedBuffer
		calls := 0
		status := func() []upstream.Status {
			calls++
			if calls == 1 {
				panic("status failed")
			}
			return []upstream.Status{{Server: "slow", State: upstream.StateConnecting}}
		}
		stop := progress(&out, zap.New(core), status, time.Second)
		time.Sleep(2*time.Second + time.Millisecond) // fake time: two ticks
		synctest.Wait()
		stop()
		if got := out.String(); !strings.Contains(got, "still connecting: slow") {
			t.Errorf("progress output %q: want a report after the panicking one", got)
		}
		if logs.FilterField(zap.String("goroutine", "progress report")).Len() != 1 {
			t.Errorf("got log %v, want the panic logged once with the goroutine's name", logs.All())
		}
	})
}
