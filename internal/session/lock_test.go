//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package session

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOpenLocksTheSession: a second Open of an open session fails with an
// *InUseError naming this process, whether or not the first has written
// anything, and succeeds once the first is closed.
func TestOpenLocksTheSession(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")

	_, err := Open(opts, "s")
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.ID != "s" || inUse.PID != os.Getpid() {
		t.Fatalf("second Open: got %v, want an *InUseError for s naming pid %d", err, os.Getpid())
	}
	want := fmt.Sprintf("session s is already open in this mcproxy process (pid %d); close it first", os.Getpid())
	if err.Error() != want {
		t.Errorf("second Open: got %q, want %q", err, want)
	}
	// The failed Open changed nothing: the first host still records.
	call(t, h, "fs:b", "two")
	if got := len(h.Messages()); got != 4 {
		t.Errorf("got %d messages after the refused Open, want 4", got)
	}
	// Another session is not affected.
	openHost(t, opts, "other")

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h2 := openHost(t, opts, "s")
	if got := len(h2.Messages()); got != 4 {
		t.Errorf("reopened after Close: got %d messages, want 4", got)
	}
}

// TestRebuildNeedsTheLock: Rebuild refuses a session a host has open, and
// writes nothing; once the host is closed it runs.
func TestRebuildNeedsTheLock(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "s")
	call(t, h, "fs:a", "one")
	statePath := filepath.Join(h.Dir(), StateFile)
	before, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}

	rep, err := Rebuild(opts, "s")
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() {
		t.Fatalf("Rebuild of an open session: got %v, want an *InUseError naming pid %d", err, os.Getpid())
	}
	if rep.Records != 0 || rep.Seq != 0 {
		t.Errorf("refused Rebuild reported %+v, want nothing done", rep)
	}
	if after, _ := os.ReadFile(statePath); !bytes.Equal(after, before) {
		t.Error("refused Rebuild changed state.json")
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(opts, "s"); err != nil {
		t.Fatalf("Rebuild after Close: %v", err)
	}
	// Rebuild let go of the lock when it finished.
	openHost(t, opts, "s")
}

// TestLockAcrossProcesses: a session held by another process is refused
// with that process's pid, and the lock it leaves behind when it is killed
// blocks nothing (the kernel drops a flock when its holder dies; the stale
// lock file stays).
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd, first := startChild(t, envLockHolderDir+"="+dir)
	if first != "HELD "+strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("holder said %q, want HELD %d", first, cmd.Process.Pid)
	}

	opts := testOptionsIn(dir)
	want := fmt.Sprintf("session held is in use by another mcproxy process (pid %d); stop it first", cmd.Process.Pid)
	if _, err := Open(opts, "held"); err == nil || err.Error() != want {
		t.Fatalf("Open while another process holds it: got %v, want %q", err, want)
	}
	if _, err := Rebuild(opts, "held"); err == nil || err.Error() != want {
		t.Errorf("Rebuild while another process holds it: got %v, want %q", err, want)
	}
	// Reading needs no lock.
	if _, err := Inspect(opts, "held"); err != nil {
		t.Errorf("Inspect while another process holds it: %v", err)
	}

	killChild(t, cmd)
	stale, err := os.ReadFile(filepath.Join(dir, "held", LockFile))
	if err != nil || strings.TrimSpace(string(stale)) != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("lock file after the kill: got %q (%v), want the dead holder's pid left in it", stale, err)
	}
	h := openHost(t, opts, "held")
	call(t, h, "fs:a", "after the holder died")
	if got := len(h.Messages()); got != 2 {
		t.Errorf("got %d messages, want 2", got)
	}
}
