package session

import (
	"fmt"
	"os"
)

// LockFile is the file in a session directory that a writer holds an
// exclusive advisory lock on (flock on unix), so two processes (two proxies,
// or a proxy and `mcproxy sessions rebuild`) never write one session at
// once. It holds the pid of the process holding the lock, for the error
// the next one gets. The lock, not the file, is what counts: the kernel
// drops it when its holder exits however it exits, so a file left behind
// by a crashed process blocks nothing.
//
// On platforms without flock (see lock_other.go) the lock is not taken and
// nothing prevents two writers; run one mcproxy per data directory there.
const LockFile = "lock"

// InUseError is returned by Open and Rebuild when another open host holds
// the session's lock: another mcproxy process serving it or rebuilding it,
// or a host this process already has open.
type InUseError struct {
	ID string
	// PID is the holder's process id as it wrote it into the lock file; 0
	// when it could not be read (the holder had not written it yet).
	PID int
}

func (e *InUseError) Error() string {
	pid := "pid unknown"
	if e.PID > 0 {
		pid = fmt.Sprintf("pid %d", e.PID)
	}
	if e.PID == os.Getpid() {
		return fmt.Sprintf("session %s is already open in this mcproxy process (%s); close it first", e.ID, pid)
	}
	return fmt.Sprintf("session %s is in use by another mcproxy process (%s); stop it first", e.ID, pid)
}
