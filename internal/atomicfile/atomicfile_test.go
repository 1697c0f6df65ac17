package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// countingFS is the real file system that counts fsyncs and can fail the
// directory fsync, which a real disk does not do on demand.
type countingFS struct {
	OS
	fileSyncs, dirSyncs int
	failSyncDir         bool
}

func (c *countingFS) CreateTemp(dir, pattern string) (File, error) {
	f, err := c.OS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, fs: c}, nil
}

func (c *countingFS) SyncDir(path string) error {
	c.dirSyncs++
	if c.failSyncDir {
		return &os.PathError{Op: "sync", Path: path, Err: syscall.EIO}
	}
	return c.OS.SyncDir(path)
}

type countingFile struct {
	File
	fs *countingFS
}

func (f *countingFile) Sync() error {
	f.fs.fileSyncs++
	return f.File.Sync()
}

// entries lists dir's file names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "tokens.json")
	if err := WriteFile(path, []byte("one"), Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "two" {
		t.Fatalf("got %q (%v), want %q", got, err, "two")
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(path)
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("file mode %o, want 600 (whatever the replaced file had)", m)
		}
		di, _ := os.Stat(dir)
		if m := di.Mode().Perm(); m != 0o700 {
			t.Errorf("created directory mode %o, want 700", m)
		}
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q, want only tokens.json", names)
	}
}

func TestWriteFailureLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old"), Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, Options{}, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fill's error", err)
	}
	// A directory in the way makes the rename fail.
	blocked := filepath.Join(dir, "blocked")
	if err := os.Mkdir(filepath.Join(dir, "blocked"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(blocked, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(blocked, []byte("new"), Options{}); err == nil {
		t.Fatal("renaming over a non-empty directory succeeded, want an error")
	}
	got, _ := os.ReadFile(path)
	if string(got) != "old" {
		t.Errorf("after a failed write the file holds %q, want %q", got, "old")
	}
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("directory holds %q, want state.json and blocked only (no temporary file)", names)
	}
}

func TestWriteSyncs(t *testing.T) {
	for _, tc := range []struct {
		name                string
		opts                Options
		fileSyncs, dirSyncs int
	}{
		{"durable", Options{}, 1, 1},
		{"no sync", Options{NoSync: true}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := &countingFS{}
			tc.opts.FS = fsys
			path := filepath.Join(t.TempDir(), "f")
			if err := WriteFile(path, []byte("x"), tc.opts); err != nil {
				t.Fatal(err)
			}
			if fsys.fileSyncs != tc.fileSyncs || fsys.dirSyncs != tc.dirSyncs {
				t.Errorf("got %d file and %d directory fsyncs, want %d and %d", fsys.fileSyncs, fsys.dirSyncs, tc.fileSyncs, tc.dirSyncs)
			}
		})
	}
}

func TestWriteDirSyncFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	err := WriteFile(path, []byte("new"), Options{FS: &countingFS{failSyncDir: true}})
	if !errors.Is(err, ErrDirNotSynced) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("got %v, want ErrDirNotSynced wrapping EIO", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("file holds %q, want %q: the rename happened", got, "new")
	}
}
