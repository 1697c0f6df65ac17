package upstream

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// stdoutFilter sits between a stdio child's stdout and mcp-go's reader,
// which reads whole lines (bufio ReadString). It does two things to each
// line, in one pass:
//   - It bounds the line at limit bytes (limits.max_message_bytes; zero =
//     unbounded): past that Read returns a *MessageTooLargeError (and calls
//     tooLarge once), so an oversize line is never read whole.
//   - It drops what is not JSON-RPC. mcp-go skips every line it cannot
//     decode without a word, so a server that prints a banner or its logs to
//     stdout (the protocol channel) fails in silence; the filter drops those
//     lines itself and logs them, at most noiseBurst per noiseWindow with a
//     count of the rest (issue 16).
//
// Lines are streamed, never held whole: a line is judged by its first
// buffered chunk, so one that starts as a JSON object passes through however
// long it is (up to the bound), and one that does not is discarded as it is
// read.
type stdoutFilter struct {
	r   *bufio.Reader
	log *noiseLog

	server   string      // names the upstream in a *MessageTooLargeError
	limit    int64       // the longest line; zero = unbounded
	tooLarge func(error) // told once of an oversize line; nil = nobody

	pending []byte // what Read hands out next
	buf     []byte // backing store of pending
	err     error  // the read error to return once pending is empty
	midLine bool   // the last chunk did not end its line
	passing bool   // the current line goes through
	run     int64  // bytes of the current line so far
}

func newStdoutFilter(r io.Reader, log *zap.Logger) *stdoutFilter {
	return &stdoutFilter{r: bufio.NewReaderSize(r, 64<<10), log: &noiseLog{log: log}}
}

func (f *stdoutFilter) Read(p []byte) (int, error) {
	for {
		if len(f.pending) > 0 {
			n := copy(p, f.pending)
			f.pending = f.pending[n:]
			return n, nil
		}
		if f.err != nil {
			return 0, f.err
		}
		chunk, err := f.r.ReadSlice('\n')
		ended := err == nil
		if err != nil && err != bufio.ErrBufferFull {
			f.err = err
		}
		if len(chunk) == 0 {
			continue
		}
		start := !f.midLine
		f.midLine = !ended
		if start {
			f.run = 0
		}
		f.run += int64(len(bytes.TrimSuffix(chunk, []byte{'\n'})))
		if f.limit > 0 && f.run > f.limit {
			f.err = &MessageTooLargeError{Server: f.server, Limit: f.limit, Restarted: true}
			if f.tooLarge != nil {
				f.tooLarge(f.err)
			}
			continue
		}
		if start {
			f.passing = f.judge(chunk, ended)
		}
		if f.passing {
			f.buf = append(f.buf[:0], chunk...)
			f.pending = f.buf
		}
	}
}

// judge decides whether the line starting with chunk goes through: it must
// start as a JSON object, and when the whole line is in chunk, carry
// "jsonrpc". Blank lines are dropped quietly; anything else is logged.
func (f *stdoutFilter) judge(chunk []byte, whole bool) bool {
	t := bytes.TrimSpace(chunk)
	if len(t) == 0 && whole {
		return false
	}
	if len(t) > 0 && t[0] == '{' && (!whole || bytes.Contains(t, []byte(`"jsonrpc"`))) {
		return true
	}
	f.log.dropped(t)
	return false
}

// Rate limits of the dropped-line log.
const (
	noiseBurst   = 5
	noiseWindow  = time.Minute
	maxNoiseLine = 200
)

// noiseLog logs dropped stdout lines, at most noiseBurst per noiseWindow,
// and how many it kept quiet about when the next window opens.
type noiseLog struct {
	log *zap.Logger
	now func() time.Time // nil = time.Now

	mu         sync.Mutex
	windowFrom time.Time
	logged     int
	suppressed int
}

func (n *noiseLog) dropped(line []byte) {
	now := time.Now()
	if n.now != nil {
		now = n.now()
	}
	n.mu.Lock()
	if now.Sub(n.windowFrom) >= noiseWindow {
		if n.suppressed > 0 {
			n.log.Warn("more lines the upstream wrote to stdout were not JSON-RPC and were dropped", zap.Int("lines", n.suppressed))
		}
		n.windowFrom, n.logged, n.suppressed = now, 0, 0
	}
	if n.logged >= noiseBurst {
		n.suppressed++
		n.mu.Unlock()
		return
	}
	n.logged++
	last := n.logged == noiseBurst
	n.mu.Unlock()
	text := string(line)
	if len(text) > maxNoiseLine {
		text = strings.ToValidUTF8(text[:maxNoiseLine], "") + "..."
	}
	msg := "the upstream wrote a line to stdout that is not JSON-RPC; dropped (stdout carries the protocol: the server should log to stderr)"
	if last {
		msg += "; further such lines are counted, not shown, for a minute"
	}
	n.log.Warn(msg, zap.String("line", text))
}
