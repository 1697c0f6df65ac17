package mcptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go v1.2.1's streamable HTTP server queues every notification of a
// session on one channel, and two kinds of reader take from it: the
// forwarder of each POST in flight and the writer of the session's
// standalone GET stream. So the progress notifications of one call can be
// split between its own POST stream, another call's POST stream and the GET
// stream, and reach the client out of order (the conformance suite's
// "Progress values should be increasing" failed so, intermittently) or after
// the call's result. callStreams closes that gap in one place: the
// notifications mcproxy sends about a request (Notify) are written on that
// request's own POST stream, in the order they were sent, before its answer.
// Everything else (list changes, resource updates, notifications sent after
// the answer) still goes through mcp-go's session queue.

type callStreamKey struct{}

// callStream is one POST's response while mcp-go handles it. Both mcp-go
// (through the writer it is given) and Notify write to the client through it,
// one whole write at a time under mu.
type callStream struct {
	mu   sync.Mutex
	real http.ResponseWriter
	fl   http.Flusher
	// shadow is the header map mcp-go sets; it is copied to the real one
	// when mcp-go writes its header, so mcp-go's goroutines and Notify
	// never share a map.
	shadow http.Header
	// started: the real header is written. sse: the answer is an SSE
	// stream. ours: Notify started it, so mcp-go's plain JSON answer is
	// held in held and sent as the stream's last event.
	started, sse, ours bool
	held               bytes.Buffer
	// done: the request's answer is written (or the handler returned); a
	// notification from then on would follow the answer, so it is not
	// taken.
	done bool
}

// callStreams gives each streamable HTTP POST that can be answered with an
// SSE stream a callStream that Notify, called with the request's context,
// writes to.
func callStreams(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl, ok := w.(http.Flusher)
		// A batch element's answer is recorded for the batch's (batchHTTP),
		// which keeps only its responses: it has no stream of its own.
		_, element := w.(*recorder)
		if r.Method != http.MethodPost || !ok || element || !acceptsSSE(r) {
			next.ServeHTTP(w, r)
			return
		}
		cs := &callStream{real: w, fl: fl, shadow: http.Header{}}
		next.ServeHTTP(cs, r.WithContext(context.WithValue(r.Context(), callStreamKey{}, cs)))
		cs.finish()
	})
}

// acceptsSSE reports whether the client said it takes text/event-stream.
func acceptsSSE(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if bytes.Contains([]byte(v), []byte("text/event-stream")) || bytes.Contains([]byte(v), []byte("*/*")) {
			return true
		}
	}
	return false
}

// Notify writes a notification about the request whose handler context ctx
// is on that request's own response stream, turning a plain answer into an
// SSE stream if it is the first thing written. It returns false when it
// cannot (no such stream: stdio, legacy SSE, a batch element, a client that
// takes no SSE; or the answer is already written); the caller then sends it
// as it would otherwise, through the session.
func Notify(ctx context.Context, method string, params map[string]any) bool {
	cs, ok := ctx.Value(callStreamKey{}).(*callStream)
	if !ok {
		return false
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
	n.Params.AdditionalFields = params
	data, err := json.Marshal(n)
	if err != nil {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.done || (cs.started && !cs.sse) {
		return false
	}
	if !cs.started {
		h := cs.real.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		cs.real.WriteHeader(http.StatusOK)
		cs.started, cs.sse, cs.ours = true, true, true
	}
	if err := writeEvent(cs.real, data); err != nil {
		cs.done = true
		return false
	}
	cs.fl.Flush()
	return true
}

func writeEvent(w http.ResponseWriter, data []byte) error {
	buf := make([]byte, 0, len(data)+24)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	return err
}

func (cs *callStream) Header() http.Header { return cs.shadow }

func (cs *callStream) WriteHeader(code int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.writeHeaderLocked(code)
}

func (cs *callStream) writeHeaderLocked(code int) {
	if cs.started {
		// Notify began the stream: mcp-go's own header (a plain JSON answer,
		// or its own upgrade to SSE) is already on the wire.
		return
	}
	h := cs.real.Header()
	for k, v := range cs.shadow {
		h[k] = v
	}
	cs.real.WriteHeader(code)
	cs.started = true
	cs.sse = bytes.HasPrefix([]byte(cs.shadow.Get("Content-Type")), []byte("text/event-stream"))
}

func (cs *callStream) Write(p []byte) (int, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.started {
		cs.writeHeaderLocked(http.StatusOK)
	}
	if cs.ours && !bytes.HasPrefix([]byte(cs.shadow.Get("Content-Type")), []byte("text/event-stream")) {
		// mcp-go answers in plain JSON on a stream Notify started: the
		// answer becomes the stream's last event (finish).
		cs.held.Write(p)
		return len(p), nil
	}
	if cs.sse && isAnswerEvent(p) {
		cs.done = true
	}
	return cs.real.Write(p)
}

func (cs *callStream) Flush() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.held.Len() == 0 {
		cs.fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (cs *callStream) Unwrap() http.ResponseWriter { return cs.real }

// finish sends an answer held back by a stream Notify started, and stops
// Notify writing to a response that has ended.
func (cs *callStream) finish() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.done = true
	if cs.held.Len() == 0 {
		return
	}
	answer := bytes.TrimRight(cs.held.Bytes(), "\n")
	if err := writeEvent(cs.real, answer); err == nil {
		cs.fl.Flush()
	}
	cs.held.Reset()
}

// isAnswerEvent reports whether an SSE event mcp-go writes is a JSON-RPC
// answer (an id followed by result or error, the order mcp-go's response
// types marshal in), after which nothing more about the request may be sent
// on its stream. A server request (an id, then params or method) is not.
func isAnswerEvent(p []byte) bool {
	const prefix = "event: message\ndata: "
	if !bytes.HasPrefix(p, []byte(prefix)) {
		return false
	}
	data := p[len(prefix):]
	i := bytes.Index(data, []byte(`"id":`))
	if i < 0 || i > 32 {
		return false
	}
	rest := data[i+len(`"id":`):]
	// Skip the id: a number or a string without escapes (mcp-go's ids).
	if len(rest) > 0 && rest[0] == '"' {
		j := bytes.IndexByte(rest[1:], '"')
		if j < 0 {
			return false
		}
		rest = rest[j+2:]
	} else {
		j := bytes.IndexByte(rest, ',')
		if j < 0 {
			return false
		}
		rest = rest[j:]
	}
	return bytes.HasPrefix(rest, []byte(`,"result"`)) || bytes.HasPrefix(rest, []byte(`,"error"`))
}
