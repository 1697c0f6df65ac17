package upstream

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// stderrTailLines is how many of a child's last stderr lines are kept to
// explain why it exited.
const stderrTailLines = 5

// maxStderrLine bounds one logged stderr line.
const maxStderrLine = 64 * 1024

// process is one stdio child. We own its lifecycle instead of leaving it to
// mcp-go's stdio transport because that transport's shutdown waits are fixed
// constants and it ties the child to the context Start was called with; we
// need shutdown stages tests can shorten and a child that lives exactly as
// long as its session.
type process struct {
	cmd *exec.Cmd
	pid int

	stdin  *os.File // our write end of the child's stdin
	stdout *os.File // our read end of the child's stdout

	exited  chan struct{} // closed once Wait has returned
	waitErr error         // set before exited is closed

	stderrDone chan struct{} // closed when the stderr reader returns
	stderrRead *os.File

	tailMu sync.Mutex
	tail   []string
}

// startProcess launches the command of s with its environment (childEnv)
// and its cwd, and starts logging its stderr line by line.
func startProcess(s config.ServerConfig, log *zap.Logger) (*process, error) {
	cmd := exec.Command(config.ExpandHome(s.Command), s.Args...)
	cmd.Env = childEnv(os.Environ(), s)
	cmd.Dir = config.ExpandHome(s.Cwd)
	setProcessGroup(cmd)

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("creating stdin pipe: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("creating stdout pipe: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("starting %q: %w", s.Command, err)
	}
	// The child holds its own copies now.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		stderrRead: errR,
	}
	goroutine.Go(log, "upstream process wait", func() {
		defer close(p.exited)
		p.waitErr = cmd.Wait()
	})
	goroutine.Go(log, "upstream stderr reader", func() { p.logStderr(log) })
	return p, nil
}

// logStderr copies the child's stderr into the log, one entry per line, and
// keeps the last few lines to explain a crash.
func (p *process) logStderr(log *zap.Logger) {
	defer close(p.stderrDone)
	// Lines longer than the buffer are logged in buffer-sized pieces, so a
	// child that never writes a newline cannot grow our memory.
	r := bufio.NewReaderSize(p.stderrRead, maxStderrLine)
	for {
		b, _, err := r.ReadLine()
		if line := strings.TrimRight(string(b), "\r"); line != "" {
			log.Info(line, zap.String("stream", "stderr"))
			p.tailMu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > stderrTailLines {
				p.tail = p.tail[len(p.tail)-stderrTailLines:]
			}
			p.tailMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// stderrTail is the child's last stderr lines joined for an error message.
func (p *process) stderrTail() string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return strings.Join(p.tail, " | ")
}

// exitError describes how the child ended, with its last stderr lines.
// Call it only once the child has exited.
func (p *process) exitError() error {
	p.drainStderr()
	err := fmt.Errorf("process %d exited: %v", p.pid, p.waitErr)
	if p.waitErr == nil {
		err = fmt.Errorf("process %d exited with status 0", p.pid)
	}
	if tail := p.stderrTail(); tail != "" {
		err = fmt.Errorf("%w; last stderr: %s", err, tail)
	}
	return err
}

// stop ends the child in stages, each with its own wait, as MCP's stdio
// shutdown asks: close its stdin (a well-behaved server exits on EOF), then
// SIGTERM, then SIGKILL. The process group is killed last so grandchildren
// (npx, shell wrappers) do not outlive it. It returns once the child is
// reaped and the stderr reader has finished.
func (p *process) stop(stopGrace, termGrace time.Duration, log *zap.Logger) {
	p.stdin.Close()
	if !p.waitFor(stopGrace) {
		log.Debug("child ignored stdin close; sending SIGTERM", zap.Int("pid", p.pid), zap.Duration("waited", stopGrace))
		p.terminate()
		if !p.waitFor(termGrace) {
			log.Warn("child ignored SIGTERM; killing it", zap.Int("pid", p.pid), zap.Duration("waited", termGrace))
			p.kill()
			<-p.exited
		}
	}
	p.killGroup()
	// Let the stderr logger read what the child wrote last, then close our
	// ends: that unblocks the transport's reader and the logger even if a
	// grandchild still holds the write ends.
	p.drainStderr()
	p.stdout.Close()
	p.stderrRead.Close()
	<-p.stderrDone
}

// stderrDrainWait bounds waiting for an exited child's stderr to reach EOF.
const stderrDrainWait = 500 * time.Millisecond

// drainStderr waits, briefly, for the stderr logger to reach EOF, which it
// does soon after the child exits unless a grandchild holds the pipe.
func (p *process) drainStderr() {
	t := time.NewTimer(stderrDrainWait)
	defer t.Stop()
	select {
	case <-p.stderrDone:
	case <-t.C:
	}
}

// waitFor reports whether the child exited within d.
func (p *process) waitFor(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}
