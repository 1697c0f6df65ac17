// Package filelock owns one thing: an exclusive lock on a file that holds
// across processes, for a read-modify-write of a small state file that
// two mcproxy processes (a serving proxy and a CLI command) may change at
// once. It is flock(2) where the platform has it (lock_flock.go) and an
// exclusively created lock file elsewhere (lock_other.go). It locks
// nothing within a process beyond what it locks across them (flock locks
// belong to the open file, so two Lock calls in one process exclude each
// other too), reads and writes nothing but the lock file, and logs
// nothing.
package filelock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Lock takes the exclusive lock on path (created 0600, its directory
// 0700, when missing), waiting until it is free or ctx ends, and returns
// the function that releases it. The lock file stays in place; only the
// lock is released.
func Lock(ctx context.Context, path string) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	release, err = lock(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return release, nil
}
