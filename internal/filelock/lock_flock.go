//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package filelock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lock takes a flock on path. It polls with LOCK_NB so that a cancelled
// ctx ends the wait: a blocking flock cannot be interrupted.
func lock(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	wait := time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return func() { f.Close() }, nil // closing the file releases the lock
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
