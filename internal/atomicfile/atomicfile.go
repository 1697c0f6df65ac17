// Package atomicfile replaces a file's content so that a reader, and the
// disk after a crash, sees the old content or the new, never a mix: it
// writes a temporary file beside the target, fsyncs it, renames it over the
// target and fsyncs the directory. Every file mcproxy rewrites in place goes
// through it.
//
// The files it writes are the owner's only (0600) and a directory it
// creates is 0700: each holds something private (sign-in tokens, tool
// approvals, session state, learned words, a user's config). It does not
// lock: callers serialize their own writers.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ErrDirNotSynced is wrapped by the error of a write whose rename happened
// but whose directory fsync failed: the file holds the new content, only
// its durability is in doubt. A caller that must undo a failed write (the
// session layer rolls back a batch) branches on it to know the target was
// replaced.
var ErrDirNotSynced = errors.New("the file was replaced but its directory was not synced")

// FS is the file operations a write performs. OS is the real one; the
// session layer passes its own to inject faults (a full disk) in tests.
type FS interface {
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string, perm fs.FileMode) error
	// CreateTemp creates a new file, readable by its owner only, in dir.
	CreateTemp(dir, pattern string) (File, error)
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// Remove deletes one file.
	Remove(path string) error
	// SyncDir flushes a directory's entries.
	SyncDir(path string) error
}

// File is an open temporary file as a write uses it.
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

// CreateTemp implements FS; os.CreateTemp makes the file 0600.
func (OS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove implements FS.
func (OS) Remove(path string) error { return os.Remove(path) }

// SyncDir implements FS. On Windows it does nothing: a directory handle
// cannot be flushed there, and NTFS journals the rename itself.
func (OS) SyncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
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

// Options tune a write. The zero value is a durable write to the real file
// system.
type Options struct {
	// FS performs the file operations; nil means OS.
	FS FS
	// NoSync skips both fsyncs, for caches and other files whose loss in a
	// crash costs only a recomputation. The rename still keeps readers from
	// a half-written file.
	NoSync bool
}

// WriteFile replaces the file at path with data (see Write).
func WriteFile(path string, data []byte, opts Options) error {
	return Write(path, opts, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write replaces the file at path with what fill writes, creating path's
// directory if needed: fill writes a temporary file in that directory,
// which is then fsynced, closed, renamed over path, and the directory
// fsynced. On any failure before the rename the temporary file is removed
// and path is untouched; fill's own error is returned as it is. A failure
// of the last step, the directory fsync, wraps ErrDirNotSynced.
func Write(path string, opts Options, fill func(w io.Writer) error) (err error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = OS{}
	}
	dir := filepath.Dir(path)
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := fsys.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("creating a temporary file in %s: %w", dir, err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			_ = f.Close() // a second Close only reports it was closed
			_ = fsys.Remove(tmp)
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if !opts.NoSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("syncing %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, path, err)
	}
	renamed = true
	if opts.NoSync {
		return nil
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("syncing directory %s: %w (%w)", dir, err, ErrDirNotSynced)
	}
	return nil
}
