//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package session

// dirLock is a no-op where flock is not available: nothing stops two
// processes from writing one session, so run a single mcproxy per data
// directory on these platforms (see LockFile).
type dirLock struct{}

func lockSession(dir, id string) (*dirLock, error) { return &dirLock{}, nil }

func (l *dirLock) release() error { return nil }
