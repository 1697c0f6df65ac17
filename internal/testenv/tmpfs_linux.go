package testenv

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on dir (created if missing) for the
// test, and unmounts it when the test ends: a small real file system to
// fill, so a test sees the ENOSPC a full disk gives. Mounting needs root
// (CAP_SYS_ADMIN), which CI has (it runs as root); run as another user the
// test is skipped, saying so. As root a mount that fails fails the test.
func Tmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("mounting a tmpfs needs root (CI runs as root); run this test as root to see a full disk")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mounting a %d-byte tmpfs on %s: %v (the test needs CAP_SYS_ADMIN)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// Something still holds a file open in it: detach it, so
			// the temporary directory can go.
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
}

// FillDisk writes a new file under dir until the file system holding it
// is full (ENOSPC), and returns the function that removes the file again,
// giving the space back. Space freed meanwhile is taken by calling it
// again.
func FillDisk(t testing.TB, dir string) (free func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		t.Fatalf("filling %s: %v", dir, err)
	}
	path := f.Name()
	buf := make([]byte, 4096)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: got %v, want ENOSPC", dir, err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatalf("freeing %s: %v", dir, err)
		}
	}
}
