// Package goroutine starts mcproxy's long-lived goroutines. Each one has a
// name, and a panic in it is recovered and logged with that name and its
// stack, so one bad request or one bad tool list never takes the process
// down or silently stops a background loop. It owns nothing else: the
// caller keeps the goroutine's stop path (a context or a channel) and waits
// for the done channel these functions return, so nothing outlives Close.
package goroutine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Recover, deferred at the top of a goroutine, recovers a panic, logs it
// with name and the stack, and hands the recovered value to onPanic (nil
// means nothing more is done), which can fail the work the goroutine owed
// its caller. log nil logs nothing.
//
//	defer goroutine.Recover(log, "sign-in", func(v any) { l.finish(goroutine.Error(v)) })
func Recover(log *zap.Logger, name string, onPanic func(v any)) {
	v := recover()
	if v == nil {
		return
	}
	if log != nil {
		log.Error("goroutine panicked", zap.String("goroutine", name), zap.Any("panic", v), zap.Stack("stack"))
	}
	if onPanic != nil {
		onPanic(v)
	}
}

// Error is the error a recovered panic stands for, for answering the
// goroutine's caller.
func Error(v any) error { return fmt.Errorf("internal error (a panic, logged with its stack): %v", v) }

// Go runs fn on a new goroutine named name; a panic in fn is recovered and
// logged (Recover). The returned channel is closed once fn has returned or
// panicked.
func Go(log *zap.Logger, name string, fn func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer Recover(log, name, nil)
		fn()
	}()
	return done
}

// Loop calls tick every interval (with the tick's time) until ctx ends, on a
// new goroutine named name. A panic in one tick is recovered and logged and
// the loop goes on with the next, so a background loop cannot die of one
// bad round. The returned channel is closed once the loop has stopped.
func Loop(ctx context.Context, log *zap.Logger, name string, interval time.Duration, tick func(now time.Time)) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				func() {
					defer Recover(log, name, nil)
					tick(now)
				}()
			}
		}
	}()
	return done
}
