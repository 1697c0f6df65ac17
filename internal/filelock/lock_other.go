//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package filelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// staleAfter is how long a lock file may stand before Lock gives up on
// it: without flock, a process that died holding the lock leaves its file
// behind.
const staleAfter = 30 * time.Second

// lock creates path+".held" exclusively and removes it on release, where
// there is no flock.
func lock(ctx context.Context, path string) (func(), error) {
	held := path + ".held"
	wait := time.Millisecond
	for {
		f, err := os.OpenFile(held, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			f.Close()
			return func() { os.Remove(held) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(held); err == nil && time.Since(fi.ModTime()) > staleAfter {
			return nil, fmt.Errorf("%s has been held for over %s; if no mcproxy command is running, remove it", held, staleAfter)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
