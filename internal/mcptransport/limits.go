package mcptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/jsonspan"
)

// This file holds the caps on what one HTTP request may cost: its body's
// size and the time to send it, a batch's length, and the number of
// sessions. Every refusal names the config key that raises the cap.

// Limits are the caps of the HTTP front. Zero fields mean the config
// package's defaults.
type Limits struct {
	// MaxBatch is the most messages one JSON-RPC batch may hold
	// (limits.max_batch).
	MaxBatch int
	// MaxRequestBytes is the largest request body (limits.max_request_bytes).
	MaxRequestBytes int64
	// ReadTimeout bounds reading a request's body (limits.read_timeout): a
	// client that sends half a body loses the connection after it instead
	// of holding it for ever. Long-lived responses (event streams) are not
	// affected: the deadline is lifted once the body is in.
	ReadTimeout time.Duration
	// MaxSessions is the most streamable HTTP sessions open at once
	// (limits.max_sessions).
	MaxSessions int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBatch <= 0 {
		l.MaxBatch = config.DefaultMaxBatch
	}
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = config.DefaultMaxRequestBytes
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = config.DefaultReadTimeout
	}
	if l.MaxSessions <= 0 {
		l.MaxSessions = config.DefaultMaxSessions
	}
	return l
}

type limitsKey struct{}

// limitsOf returns the limits readBody put in ctx (defaults when none).
func limitsOf(ctx context.Context) Limits {
	l, _ := ctx.Value(limitsKey{}).(Limits)
	return l.withDefaults()
}

// readBody reads every request's body before next runs, within
// l.ReadTimeout and l.MaxRequestBytes, and hands next the bytes: the MCP
// transports buffer the whole body anyway, and reading it here is what
// lets the read be timed without timing the (long-lived) response. It
// also puts l in the request's context for batchHTTP.
func readBody(next http.Handler, l Limits) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.WithContext(context.WithValue(r.Context(), limitsKey{}, l))
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// Not every ResponseWriter supports deadlines (a recorder in
		// tests); the size cap holds either way.
		_ = rc.SetReadDeadline(time.Now().Add(l.ReadTimeout))
		data, err := readAll(http.MaxBytesReader(w, r.Body, l.MaxRequestBytes), r.ContentLength, l.MaxRequestBytes)
		var tooBig *http.MaxBytesError
		if err != nil {
			// The rest of the body is not read: the connection closes
			// after the answer (net/http would otherwise try to drain it).
			w.Header().Set("Connection", "close")
		}
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, fmt.Sprintf("request body too large: more than %d bytes (limits.max_request_bytes); send less per request, or raise limits.max_request_bytes in the config", l.MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		case isTimeout(err):
			http.Error(w, fmt.Sprintf("request body not received within %s (limits.read_timeout); send the whole body promptly, or raise limits.read_timeout in the config", l.ReadTimeout), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusBadRequest)
			return
		}
		// The body is in: lift the deadline, so a long-lived answer (an
		// event stream) is not cut.
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = &bufferedBody{Reader: bytes.NewReader(data), data: data}
		r.ContentLength = int64(len(data))
		next.ServeHTTP(w, r)
	})
}

// bufferedBody is a request body readBody has read whole.
type bufferedBody struct {
	*bytes.Reader
	data []byte
}

func (*bufferedBody) Close() error { return nil }

// bodyBytes returns r's whole body and leaves r.Body reading it from the
// start again; a body readBody buffered is not copied.
func bodyBytes(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*bufferedBody); ok && b.Len() == len(b.data) {
		return b.data, nil
	}
	data, err := io.ReadAll(r.Body)
	r.Body = &bufferedBody{Reader: bytes.NewReader(data), data: data}
	return data, err
}

// postedBody returns the body of a POST (bodyBytes) and true. Any other
// request is passed to next, and a body that cannot be read is answered
// with 400; both return false: the caller is done.
func postedBody(w http.ResponseWriter, r *http.Request, next http.Handler) ([]byte, bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		next.ServeHTTP(w, r)
		return nil, false
	}
	data, err := bodyBytes(r)
	if err != nil {
		http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusBadRequest)
		return nil, false
	}
	return data, true
}

// readAll reads r to its end into one buffer sized for size bytes (the
// Content-Length, when known and within max), so a large body costs its own
// size rather than the doublings of a growing slice.
func readAll(r io.Reader, size, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 && size <= max {
		buf.Grow(int(size) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r)
	return buf.Bytes(), err
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// batchTooLong returns the error answer for a batch (a JSON array) of more
// than max messages, or nil. It stops counting at max+1, so a huge batch
// is refused without decoding it all.
func batchTooLong(data []byte, max int) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil // parseBatch reports what is wrong
	}
	var skip json.RawMessage
	for n := 0; dec.More(); n++ {
		if n == max {
			return batchError(mcp.INVALID_REQUEST, fmt.Sprintf("batch too long: more than %d messages (limits.max_batch); split it into smaller batches, or raise limits.max_batch in the config", max))
		}
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return nil
}

// checkID answers a request whose id is neither a string, a number nor
// null with Invalid Request (-32600), as JSON-RPC 2.0 asks: the message is
// well-formed JSON, so it is not a Parse error. Everything else goes to
// next unchanged. (A batch's elements are checked by batchHTTP.)
func checkID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := postedBody(w, r, next)
		if !ok {
			return
		}
		if msg := badID(data); msg != nil {
			writeJSON(w, http.StatusBadRequest, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// badID returns the Invalid Request answer for a JSON object whose "id" is
// an object, an array or a boolean; nil for anything else.
func badID(data []byte) json.RawMessage {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	// The id is found without decoding the body (a large tools/call
	// would cost a decode of its whole payload); a body that cannot be
	// walked is decoded as before. The last "id" wins, matched without
	// regard to case, as encoding/json does.
	var id json.RawMessage
	if !jsonspan.ObjectMembers(t, func(key []byte, start, end int) bool {
		if bytes.EqualFold(key, []byte("id")) {
			id = t[start:end]
		}
		return true
	}) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(t, &m) != nil {
			return nil
		}
		id = m.ID
	}
	if len(id) == 0 {
		return nil
	}
	switch id[0] {
	case '{', '[', 't', 'f':
		// Only a well-formed message gets Invalid Request; a malformed
		// one is the transport's Parse error.
		if !json.Valid(t) {
			return nil
		}
		return batchError(mcp.INVALID_REQUEST, "invalid request: \"id\" must be a string, a number or null")
	}
	return nil
}
