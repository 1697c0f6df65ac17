//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dirLock is a held session lock: an open file description with an
// exclusive flock on it. flock locks belong to the open file description,
// so a second lockSession on the same directory fails even within one
// process, and the lock goes when the file is closed or the process exits.
type dirLock struct {
	f *os.File
}

// lockSession takes the exclusive lock of the session directory dir
// (which must exist) without waiting: when another holder has it, the
// answer is an *InUseError naming that holder's pid.
func lockSession(dir, id string) (*dirLock, error) {
	path := filepath.Join(dir, LockFile)
	// os.OpenFile sets O_CLOEXEC, so stdio upstream children never inherit
	// the lock.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the session lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		pid := readLockPID(f)
		f.Close()
		return nil, &InUseError{ID: id, PID: pid}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	// Ours now: replace whatever pid an earlier holder left.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		// The pid only improves the message another process gets; the
		// lock holds without it.
		_ = f.Truncate(0)
	}
	return &dirLock{f: f}, nil
}

// readLockPID reads the holder's pid from the lock file; 0 if unreadable.
func readLockPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// release clears the pid and drops the lock. Safe on nil.
func (l *dirLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the description drops the flock
	l.f = nil
	if err != nil {
		return fmt.Errorf("releasing the session lock: %w", err)
	}
	return nil
}
