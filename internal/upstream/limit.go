package upstream

import (
	"bytes"
	"fmt"
	"io"

	"go.uber.org/zap"
)

// MessageTooLargeError is why a stdio upstream's connection was cut: it
// wrote a message (one stdout line) longer than limits.max_message_bytes.
// The call waiting for it fails with it, and the upstream is restarted.
type MessageTooLargeError struct {
	Server string
	Limit  int64
}

func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("upstream %q sent a message larger than %d bytes (limits.max_message_bytes), so mcproxy stopped reading it and restarts the server; ask for less (a narrower query, a smaller page), or raise limits.max_message_bytes in the config", e.Server, e.Limit)
}

// maxLoggedGarbage is how many non-JSON stdout lines of one process are
// logged one by one; after that every 1000th is.
const maxLoggedGarbage = 10

// stdoutReader sits between a stdio upstream's stdout and mcp-go's
// transport, which reads whole lines (bufio ReadString) and silently drops
// any that is not JSON. It bounds a line at limit bytes: past that it
// returns a *MessageTooLargeError (and calls tooLarge once), so the line is
// never read whole. It also logs the lines that do not start like a
// JSON-RPC message (a server printing a banner or debug output to stdout,
// where only protocol messages belong), with their start and length.
type stdoutReader struct {
	r        io.Reader
	server   string
	limit    int64
	tooLarge func(error)
	log      *zap.Logger

	run     int64  // bytes of the current line so far
	first   byte   // the current line's first non-blank byte (0: none yet)
	head    []byte // the start of a non-JSON line, for the log
	garbage int    // non-JSON lines seen
	err     error
}

func (s *stdoutReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	for i := 0; i < n; i++ {
		c := p[i]
		if c == '\n' {
			s.endLine()
			continue
		}
		s.run++
		if s.run > s.limit {
			s.err = &MessageTooLargeError{Server: s.server, Limit: s.limit}
			if s.tooLarge != nil {
				s.tooLarge(s.err)
			}
			return i, s.err
		}
		if s.first == 0 && c != ' ' && c != '\t' && c != '\r' {
			s.first = c
		}
		if s.first != 0 && s.first != '{' && s.first != '[' && len(s.head) < 80 {
			s.head = append(s.head, c)
		}
	}
	return n, err
}

// endLine logs the line that just ended if it was not a JSON-RPC message.
func (s *stdoutReader) endLine() {
	if s.first != 0 && s.first != '{' && s.first != '[' {
		s.garbage++
		if s.garbage <= maxLoggedGarbage || s.garbage%1000 == 0 {
			s.log.Warn("upstream wrote a line to stdout that is not a JSON-RPC message; it is dropped (a stdio MCP server must write only protocol messages to stdout, logs go to stderr)",
				zap.String("upstream", s.server), zap.ByteString("line_start", bytes.TrimSpace(s.head)), zap.Int64("line_bytes", s.run), zap.Int("non_json_lines", s.garbage))
		}
	}
	s.run, s.first, s.head = 0, 0, s.head[:0]
}
