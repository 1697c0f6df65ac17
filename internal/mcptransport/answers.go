package mcptransport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// What mcp-go v1.2.1 writes differently from what a relayed answer must
// say, corrected in the bytes it writes, in this one place for every
// transport (issue 29): each message mcp-go writes to stdio
// (stdioBatches.Write, before a batch gathers it), each streamable
// HTTP answer (correctAnswers) and the legacy SSE stream (correctStream).
//
//   - mcp-go adds an empty "annotations" to every listed tool
//     (withoutEmptyAnnotations, tools.go);
//   - a handler's error always goes out as -32603 (Internal error), so an
//     upstream's JSON-RPC error forwarded to a 2026-07-28 client (-32021
//     for a capability the client did not declare, -32602 for a tampered
//     requestState) would lose its code. A handler returns a CodedError,
//     whose text carries the code behind a marker; the answer gets the
//     code back, the text without the marker, and over HTTP the status
//     2026-07-28 prescribes for that code.
//   - mcp-go encodes a roots/list input request without params, which
//     the Go SDK client (v1.8.0) cannot decode ("unexpected end of JSON
//     input"); the spec's request object has params, so an input_required
//     answer's roots/list requests get an empty one.

// codeMarker starts the text of a CodedError; it holds nothing JSON or
// mcp-go's encoder escapes.
const codeMarker = "mcproxy-rpc-code:"

// CodedError is a handler error answered with Code and Data, not
// mcp-go's -32603 without data.
type CodedError struct {
	Code    int
	Message string
	Data    any // nil: none
}

// Error is the text mcp-go puts in the answer: the marker, the code, the
// data's JSON in base64 ("-" for none: nothing in either needs escaping in
// a JSON string), then the message; correctAnswer takes them out again.
func (e *CodedError) Error() string {
	data := "-"
	if e.Data != nil {
		if b, err := json.Marshal(e.Data); err == nil {
			data = base64.RawURLEncoding.EncodeToString(b)
		}
	}
	return codeMarker + strconv.Itoa(e.Code) + " " + data + " " + e.Message
}

var (
	internalError  = []byte(`"code":-32603,"message":"` + codeMarker)
	inputRequired  = []byte(`"resultType":"input_required"`)
	bareRoots      = []byte(`{"method":"roots/list"}`)
	rootsWithParam = []byte(`{"method":"roots/list","params":{}}`)
)

// correctAnswer returns p, one or more whole JSON-RPC messages (or SSE
// events) as mcp-go wrote them, corrected as above, and the code a
// CodedError restored (0: none).
func correctAnswer(p []byte) ([]byte, int) {
	p = withoutEmptyAnnotations(p)
	code := 0
	if i := bytes.Index(p, internalError); i >= 0 {
		if out, n, ok := restoreCode(p, i); ok {
			p, code = out, n
		}
	}
	if bytes.Contains(p, inputRequired) && bytes.Contains(p, bareRoots) {
		p = bytes.ReplaceAll(p, bareRoots, rootsWithParam)
	}
	return p, code
}

// restoreCode rewrites the CodedError whose error member's code starts at
// p[i:] (internalError) into its own code, message and data.
func restoreCode(p []byte, i int) ([]byte, int, bool) {
	rest := p[i+len(internalError):]
	fields := bytes.SplitN(rest, []byte(" "), 3)
	if len(fields) != 3 {
		return nil, 0, false
	}
	n, err := strconv.Atoi(string(fields[0]))
	if err != nil {
		return nil, 0, false
	}
	var data []byte
	if string(fields[1]) != "-" {
		if data, err = base64.RawURLEncoding.DecodeString(string(fields[1])); err != nil || !json.Valid(data) {
			return nil, 0, false
		}
	}
	msg := fields[2]
	// The message is a JSON string's text: it ends at the first quote no
	// backslash escapes.
	end := -1
	for k := 0; k < len(msg); k++ {
		if msg[k] == '\\' {
			k++
			continue
		}
		if msg[k] == '"' {
			end = k
			break
		}
	}
	if end < 0 {
		return nil, 0, false
	}
	out := make([]byte, 0, len(p)+len(data))
	out = append(out, p[:i]...)
	out = fmt.Appendf(out, `"code":%d,"message":"`, n)
	out = append(out, msg[:end+1]...)
	if data != nil {
		out = append(append(out, `,"data":`...), data...)
	}
	out = append(out, msg[end+1:]...)
	return out, n, true
}

// statusFor is the HTTP status 2026-07-28 gives a JSON-RPC error code
// (mcp-go's own mapping, for the codes a CodedError restores).
func statusFor(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// correctAnswers applies correctAnswer to what next writes. A plain JSON
// answer's status is held until its body shows whether a code was
// restored; for a 2026-07-28 request it then gets that code's status.
func correctAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		cw := &answerWriter{ResponseWriter: w, modern: mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))}
		next.ServeHTTP(cw, r)
		cw.mu.Lock()
		defer cw.mu.Unlock()
		if cw.held != 0 {
			// A JSON answer without a body.
			w.WriteHeader(cw.held)
			cw.held = 0
		}
	})
}

type answerWriter struct {
	http.ResponseWriter
	modern bool
	mu     sync.Mutex // mcp-go may write from more than one goroutine
	held   int        // a status not yet written (0: none held)
}

func (a *answerWriter) WriteHeader(code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if code == http.StatusOK && bytes.HasPrefix([]byte(a.Header().Get("Content-Type")), []byte("application/json")) {
		a.held = code
		return
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *answerWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out, code := correctAnswer(p)
	if a.held != 0 {
		status := a.held
		if code != 0 && a.modern {
			status = statusFor(code)
		}
		a.held = 0
		a.ResponseWriter.WriteHeader(status)
	}
	if _, err := a.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (a *answerWriter) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held != 0 {
		// Flushing sends the header: the held status goes as it is.
		a.ResponseWriter.WriteHeader(a.held)
		a.held = 0
	}
	if fl, ok := a.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (a *answerWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// correctStream applies correctAnswer to every event of a legacy SSE
// stream, whose answers travel on the GET stream (one event a write).
func correctStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&streamAnswers{w}, r)
	})
}

type streamAnswers struct{ http.ResponseWriter }

func (s *streamAnswers) Write(p []byte) (int, error) {
	out, _ := correctAnswer(p)
	if _, err := s.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush flushes the stream when the writer beneath can.
func (s *streamAnswers) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (s *streamAnswers) Unwrap() http.ResponseWriter { return s.ResponseWriter }
