//go:build unix

package mcptransport

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A blocking socket as stdin (what Node's child_process hands its child)
// is read through the poller; a regular file is left as it is.
func TestPollableStdin(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer theirs.Close()
	// Like os.Stdin, ours is never collected: it shares its descriptor
	// with the file pollable makes (which pollable keeps), and neither is
	// closed, so no finalizer closes a descriptor number in use elsewhere.
	testStdins = append(testStdins, ours)
	got := pollable(ours)
	p, ok := got.(*os.File)
	if !ok || p == ours {
		t.Fatalf("pollable(socket): got %T %v, want a new *os.File", got, got)
	}
	// A poller-served file takes a read deadline; a blocking one cannot.
	if err := p.SetReadDeadline(deadlineNone); err != nil {
		t.Errorf("socket after pollable: SetReadDeadline: %v, want a file the poller serves", err)
	}
	if _, err := theirs.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := io.ReadAtLeast(p, buf, 5); err != nil || string(buf[:n]) != "line\n" {
		t.Errorf("reading through pollable: got %q, %v", buf[:n], err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := pollable(f); got != io.Reader(f) {
		t.Errorf("pollable(regular file): got %v, want the file itself", got)
	}
}

// testStdins keeps the test's stand-ins for os.Stdin.
var testStdins []*os.File

// deadlineNone clears a deadline.
var deadlineNone = time.Time{}
