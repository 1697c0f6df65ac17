package session

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
)

// FS is every disk write the session layer performs, kept behind an
// interface so a test can make a write fail (a full disk) where a real
// size-limited file system is not available, and check what each failure
// leaves behind. OS is the production implementation.
//
// Reads go to the disk directly. The one write outside FS is the session
// lock (lock_flock.go): flock needs a real descriptor, and the pid it writes
// only improves the message another process gets.
type FS interface {
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string, perm fs.FileMode) error
	// CreateTemp creates a new temporary file in dir.
	CreateTemp(dir, pattern string) (File, error)
	// OpenLog opens (creating if needed) the transcript, for writing at
	// offsets the host chooses (see LogFile).
	OpenLog(path string) (LogFile, error)
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// Remove deletes one file.
	Remove(path string) error
	// Truncate cuts a file to size bytes (the transcript back to its last
	// complete record).
	Truncate(path string, size int64) error
	// SyncDir flushes a directory's entries (after a rename or create).
	SyncDir(path string) error
}

// File is an open file as the session layer uses it (atomicfile's, so
// that an FS is also the FS atomicfile writes through).
type File = atomicfile.File

// OS is the real file system: atomicfile's, plus the transcript and
// truncating.
type OS struct{ atomicfile.OS }

// LogFile is the open transcript. The host writes each batch of records
// at the transcript's end with WriteAt, into a stretch of zeros it wrote
// ahead (the reserve, trfile.go), and Sync makes the data durable: on
// Linux an fdatasync, which for bytes written over zeros already on disk
// is a data flush without a journal commit (0.7 of an fsync after an
// append on ext4 here: BenchmarkTranscriptDurable).
type LogFile interface {
	File
	io.WriterAt
}

// OpenLog implements FS.
func (OS) OpenLog(path string) (LogFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return osLog{f}, nil
}

// osLog is a LogFile on disk: Sync flushes the data and only the
// metadata needed to read it back (datasync).
type osLog struct{ *os.File }

// Sync implements LogFile.
func (f osLog) Sync() error { return datasync(f.File) }

// Truncate implements FS.
func (OS) Truncate(path string, size int64) error { return os.Truncate(path, size) }

// writeAtomic writes data to path through atomicfile with fsys: a reader
// sees the old file or the new one, never a mix; on any failure before the
// rename the temporary file is removed and path is untouched.
//
// renamed reports whether path was replaced even though err is set (only the
// final directory sync failed), so a caller that must roll back knows to
// remove it.
func writeAtomic(fsys FS, path string, data []byte) (renamed bool, err error) {
	return writeAtomicFill(fsys, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomicFill is writeAtomic with the file's content written by fill.
func writeAtomicFill(fsys FS, path string, fill func(w io.Writer) error) (renamed bool, err error) {
	err = atomicfile.Write(path, atomicfile.Options{FS: fsys}, fill)
	return err == nil || errors.Is(err, atomicfile.ErrDirNotSynced), err
}

// notExist reports whether err means a missing file.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
