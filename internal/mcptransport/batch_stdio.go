package mcptransport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/largeargs"
	"go.uber.org/zap"
)

// stdioBatches sits between mcp-go's stdio server and the client: split
// turns each batch line of the input into one line per message, and Write
// (mcp-go's output) holds back the responses to a batch's requests until
// all of them are in, then writes them as one array line. Every other line
// passes through as it is.
type stdioBatches struct {
	log     *zap.Logger
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	// pending maps the id key of a request sent in a batch to its batch.
	pending map[string]*stdioBatch
	// lifts takes the large arguments of tools/call lines (largeargs.go);
	// nil: none are lifted.
	lifts *largeargs.Table
	// calls serves single tools/call lines without the StdioServer
	// (stdio_calls.go); nil: every line goes to it.
	calls *stdioCalls
}

type stdioBatch struct {
	owed      int
	responses []json.RawMessage
}

func newStdioBatches(out io.Writer, log *zap.Logger) *stdioBatches {
	return &stdioBatches{log: log, out: out, pending: map[string]*stdioBatch{}}
}

// Write takes mcp-go's output, which may arrive in pieces, line by line.
func (s *stdioBatches) Write(p []byte) (int, error) {
	n := len(p)
	// mcp-go writes each message with one Write: each is corrected
	// (answers.go) before a batch gathers it.
	p, _ = correctAnswer(p)
	if s.lifts != nil && !s.lifts.Empty() {
		// mcp-go writes each message with one Write.
		for line := range bytes.Lines(p) {
			answered(s.lifts, line)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 && len(s.partial) == 0 {
		// Nothing is held back: pass the write through untouched, keeping
		// only a trailing incomplete line.
		i := bytes.LastIndexByte(p, '\n')
		if i >= 0 {
			if _, err := s.out.Write(p[:i+1]); err != nil {
				return 0, err
			}
		}
		s.partial = append(s.partial, p[i+1:]...)
		return n, nil
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return n, nil
		}
		line := s.partial[:i+1]
		if err := s.route(line); err != nil {
			return 0, err
		}
		s.partial = s.partial[i+1:]
	}
}

// route writes one output line, or keeps it when it answers a batched
// request. The caller holds mu.
func (s *stdioBatches) route(line []byte) error {
	if len(s.pending) > 0 {
		var e batchElement
		if json.Unmarshal(line, &e) == nil && e.Method == "" && hasID(e.ID) {
			key := idKey(e.ID)
			if b, ok := s.pending[key]; ok {
				delete(s.pending, key)
				b.responses = append(b.responses, json.RawMessage(bytes.TrimSpace(line)))
				b.owed--
				return s.finish(b)
			}
		}
	}
	_, err := s.out.Write(line)
	return err
}

// finish writes b's responses as one array line once nothing more is owed.
// The caller holds mu.
func (s *stdioBatches) finish(b *stdioBatch) error {
	if b.owed > 0 || len(b.responses) == 0 {
		return nil
	}
	out, err := json.Marshal(b.responses)
	if err != nil {
		return err
	}
	_, err = s.out.Write(append(out, '\n'))
	return err
}

// cancelledLocked forgets a batched request the client cancelled: the
// server sends no response to it, so its batch must not wait for one. The
// caller holds mu.
func (s *stdioBatches) cancelledLocked(requestID json.RawMessage) {
	if !hasID(requestID) {
		return
	}
	key := idKey(requestID)
	if b, ok := s.pending[key]; ok {
		delete(s.pending, key)
		b.owed--
		_ = s.finish(b)
	}
}

// watchCancel handles a single input line that may cancel a batched
// request. Only then is the line decoded: most lines are tool calls, some
// of them large.
func (s *stdioBatches) watchCancel(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 || !bytes.Contains(line, []byte("notifications/cancelled")) {
		return
	}
	if e, ok := readElement(line); ok {
		s.cancelledLocked(e.cancels())
	}
}

// split returns the input mcp-go reads: in's lines, with each batch line
// replaced by its messages, one line each. A request's id is registered
// before its line goes on, so its response cannot come back first. The
// goroutine feeding the pipe ends at the end of in, or when the reader is
// closed; a panic in it is logged and ends the input with an error.
func (s *stdioBatches) split(in io.Reader) *io.PipeReader {
	pr, pw := io.Pipe()
	goroutine.Go(s.log, "stdin reader", func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic while reading stdin", zap.Any("panic", p), zap.Stack("stack"))
				pw.CloseWithError(fmt.Errorf("reading stdin: internal error: %v", p))
			}
		}()
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			if t := bytes.TrimSpace(line); len(t) > 0 {
				var werr error
				if t[0] == '[' {
					werr = s.splitBatch(t, pw)
				} else if bad := badID(t); bad != nil {
					werr = s.writeLine(bad)
				} else {
					s.watchCancel(t)
					if s.lifts != nil {
						line = liftLine(s.lifts, line, t)
					}
					if s.calls == nil || !s.calls.serve(bytes.TrimSpace(line)) {
						_, werr = pw.Write(line)
					}
				}
				if werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	})
	return pr
}

// splitBatch registers a batch's requests and writes its messages to w.
func (s *stdioBatches) splitBatch(data []byte, w io.Writer) error {
	elems, bad := parseBatch(data)
	if bad != nil {
		return s.writeLine(bad)
	}
	lines, err := s.register(elems)
	if err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := w.Write(l); err != nil {
			return err
		}
	}
	return nil
}

// register records a batch's requests as owed and returns the lines to
// pass on. A panic while it does is logged, and every request of the
// batch is answered with an Internal error at once instead of being passed
// on, so no response is ever waited for in vain.
func (s *stdioBatches) register(elems []json.RawMessage) (lines [][]byte, err error) {
	b := &stdioBatch{}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic while splitting a JSON-RPC batch; its requests are answered with an internal error",
				zap.Any("panic", p), zap.Stack("stack"))
			lines, err = nil, s.failLocked(b, elems)
		}
	}()
	for _, raw := range elems {
		e, ok := readElement(raw)
		switch {
		case !ok:
			b.responses = append(b.responses, batchError(mcp.INVALID_REQUEST, invalidElement))
			continue
		case badID(raw) != nil:
			b.responses = append(b.responses, badID(raw))
			continue
		case e.isRequest():
			key := idKey(e.ID)
			if _, dup := s.pending[key]; !dup {
				s.pending[key] = b
				b.owed++
			}
		default:
			s.cancelledLocked(e.cancels())
		}
		lines = append(lines, append(bytes.TrimSpace(raw), '\n'))
	}
	// With nothing owed, the batch is answered now (its invalid elements)
	// or not at all (notifications and responses only).
	return lines, s.finish(b)
}

// failLocked forgets what b registered and answers each request of elems
// with an Internal error, as one array line. The caller holds mu.
func (s *stdioBatches) failLocked(b *stdioBatch, elems []json.RawMessage) error {
	for key, owner := range s.pending {
		if owner == b {
			delete(s.pending, key)
		}
	}
	failed := &stdioBatch{}
	for _, raw := range elems {
		if e, ok := readElement(raw); ok && e.isRequest() {
			failed.responses = append(failed.responses, rpcError(e.ID, mcp.INTERNAL_ERROR, internalErrorText(e.Method)))
		}
	}
	return s.finish(failed)
}

func (s *stdioBatches) writeLine(msg json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.out.Write(append(append([]byte{}, msg...), '\n'))
	return err
}
