package session

import (
	"os"
	"syscall"
)

// datasync is fsync(2). Go's File.Sync on macOS asks for F_FULLFSYNC,
// which also empties the drive's own cache and costs milliseconds per
// call on Apple's disks; fsync(2) hands the data to the drive, as SQLite
// does by default there.
func datasync(f *os.File) error {
	for {
		err := syscall.Fsync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
