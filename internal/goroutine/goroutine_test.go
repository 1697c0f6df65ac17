package goroutine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.ErrorLevel)
	return zap.New(core), logs
}

func TestGoRecoversAndLogs(t *testing.T) {
	log, logs := observed()
	<-Go(log, "the-worker", func() { panic("boom") })
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("got %d log entries, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["goroutine"] != "the-worker" || f["panic"] != "boom" || !strings.Contains(f["stack"].(string), "goroutine_test") {
		t.Errorf("got fields %v, want the goroutine's name, the panic and a stack naming the panicking function", f)
	}
}

func TestGoDoneAfterReturn(t *testing.T) {
	var ran atomic.Bool
	<-Go(nil, "plain", func() { ran.Store(true) })
	if !ran.Load() {
		t.Fatal("done was closed before fn ran")
	}
}

func TestRecoverHandsThePanicToTheOwner(t *testing.T) {
	got := make(chan error, 1)
	go func() {
		defer Recover(nil, "owner", func(v any) { got <- Error(v) })
		panic(errors.New("bad input"))
	}()
	if err := <-got; err == nil || !strings.Contains(err.Error(), "bad input") {
		t.Fatalf("got %v, want an error carrying the panic", err)
	}
}

// A panic in one tick must not stop the loop: the next tick runs.
func TestLoopSurvivesAPanickingTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log, logs := observed()
		ctx, cancel := context.WithCancel(context.Background())
		var ticks atomic.Int32
		done := Loop(ctx, log, "sweep", time.Second, func(time.Time) {
			if ticks.Add(1) == 1 {
				panic("first tick")
			}
		})
		time.Sleep(3*time.Second + time.Millisecond) // fake time: three ticks
		synctest.Wait()
		cancel()
		<-done
		if n := ticks.Load(); n != 3 {
			t.Errorf("got %d ticks, want 3 (the loop stopped after the panic)", n)
		}
		if n := logs.Len(); n != 1 {
			t.Errorf("got %d panics logged, want 1", n)
		}
	})
}
