package session

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	// OpenAppend opens (creating if needed) a file for appending.
	OpenAppend(path string) (File, error)
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

// File is an open file as the session layer uses it.
type File interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// OS is the real file system.
type OS struct{}

// MkdirAll implements FS.
func (OS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

// CreateTemp implements FS.
func (OS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// OpenAppend implements FS.
func (OS) OpenAppend(path string) (File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove implements FS.
func (OS) Remove(path string) error { return os.Remove(path) }

// Truncate implements FS.
func (OS) Truncate(path string, size int64) error { return os.Truncate(path, size) }

// SyncDir implements FS.
func (OS) SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeAtomic writes data to path through a temporary file in the same
// directory: write, fsync, close, rename over path, fsync the directory. A
// reader sees the old file or the new one, never a mix; on any failure the
// temporary file is removed and path is untouched.
//
// renamed reports whether path was replaced even though err is set (only the
// final directory sync failed), so a caller that must roll back knows to
// remove it.
func writeAtomic(fsys FS, path string, data []byte) (renamed bool, err error) {
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := fsys.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, fmt.Errorf("creating a temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil && !renamed {
			_ = f.Close()
			_ = fsys.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return false, fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return false, fmt.Errorf("renaming %s to %s: %w", tmp, path, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		// The rename happened; only its durability is in doubt. Report it
		// anyway, so the caller can roll back.
		return true, fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return true, nil
}

// exists reports whether path names an existing file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// notExist reports whether err means a missing file.
func notExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
