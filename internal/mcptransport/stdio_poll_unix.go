//go:build unix

package mcptransport

import (
	"io"
	"os"
	"sync"
	"syscall"
)

// pollable is in, when it is a pipe or socket left in blocking mode (what
// a client such as Node's child_process hands its child as stdin), as a
// file the runtime's poller reads: a blocking read parks a thread in the
// kernel for as long as the client is silent, so each request line wakes
// that thread, which must take a processor back, and the runtime's monitor
// keeps waking every 20 µs to hand the processor on (issue 28: a fifth of
// the proxy's CPU on an echo). Terminals and files are left as they are:
// their file description may be shared with the user's shell. The file
// returned is kept for the process's life (closing or losing it would
// close the descriptor).
func pollable(in io.Reader) io.Reader {
	f, ok := in.(*os.File)
	if !ok {
		return in
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return in
	}
	p := os.NewFile(uintptr(fd), f.Name())
	if p == nil {
		return in
	}
	kept.mu.Lock()
	kept.files = append(kept.files, p)
	kept.mu.Unlock()
	return p
}

// kept holds the files pollable made, so that none is collected (its
// finalizer would close the descriptor it shares).
var kept struct {
	mu    sync.Mutex
	files []*os.File
}
