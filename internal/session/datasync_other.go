//go:build !linux && !darwin

package session

import "os"

// datasync is an fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }
