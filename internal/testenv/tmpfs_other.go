//go:build !linux

package testenv

import "testing"

// Tmpfs skips the test: only Linux has tmpfs (see tmpfs_linux.go).
func Tmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	t.Skip("a tmpfs to fill is mounted on Linux only")
}

// FillDisk is not reached off Linux (Tmpfs skipped the test).
func FillDisk(t testing.TB, dir string) (free func()) {
	t.Helper()
	t.Fatal("FillDisk needs the tmpfs of Tmpfs (Linux only)")
	return nil
}
