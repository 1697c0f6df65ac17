package mcptransport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"go.uber.org/zap"
)

// batchHTTP passes a POST whose body is a batch to next one message at a
// time (each as a POST of its own, with the same headers, concurrently).
// With answersInBody (streamable HTTP) it answers with the array of their
// responses as JSON; responses that next streams as server-sent events are
// taken from the stream, and what else the stream carried (progress, log
// messages) has no place in a batch answer. Without (legacy SSE's
// /message, whose answers travel on the event stream) each message simply
// goes on by itself and the batch gets 202. Every other request reaches
// next untouched.
//
// Each message runs in a goroutine of its own; a panic there (net/http
// recovers only the request's own goroutine) is logged to log and answered
// as an Internal error for that message, and the rest of the batch is
// answered as usual.
func batchHTTP(next http.Handler, answersInBody bool, log *zap.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is usually in memory already (readBody): it is looked
		// at, not copied.
		data, ok := postedBody(w, r, next)
		if !ok {
			return
		}
		if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '[' {
			next.ServeHTTP(w, r)
			return
		}
		if bad := batchTooLong(data, limitsOf(r.Context()).MaxBatch); bad != nil {
			writeJSON(w, http.StatusBadRequest, bad)
			return
		}
		elems, bad := parseBatch(data)
		if bad != nil {
			writeJSON(w, http.StatusBadRequest, bad)
			return
		}
		answers := make([]forwarded, len(elems))
		var wg sync.WaitGroup
		slots := make(chan struct{}, MaxBatchConcurrency)
		for i, raw := range elems {
			if _, ok := readElement(raw); !ok {
				answers[i].responses = []json.RawMessage{batchError(mcp.INVALID_REQUEST, invalidElement)}
				continue
			}
			if bad := badID(raw); bad != nil {
				answers[i].responses = []json.RawMessage{bad}
				continue
			}
			// A client that went away gets none of its remaining
			// messages run (the running ones see its context end).
			select {
			case slots <- struct{}{}:
			case <-r.Context().Done():
			}
			if r.Context().Err() != nil {
				break
			}
			wg.Add(1)
			// The element's own recover (recovered) answers it; Go names
			// the goroutine and stands behind that.
			goroutine.Go(log, "HTTP batch element", func() {
				defer func() { <-slots; wg.Done() }()
				defer func() {
					if p := recover(); p != nil {
						answers[i] = recovered(log, raw, p)
					}
				}()
				answers[i] = forward(next, r, bytes.TrimSpace(raw), answersInBody)
			})
		}
		wg.Wait()
		if r.Context().Err() != nil {
			return // nobody reads the answer
		}
		if f, ok := refusedAlike(answers); ok {
			// Every message was refused the same way, at the HTTP level (an
			// unknown session: 404, which tells the client to initialize
			// again): the batch is refused as a single message would be.
			if ct := f.header.Get("Content-Type"); ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(f.status)
			_, _ = w.Write(f.body)
			return
		}
		var all []json.RawMessage
		for _, a := range answers {
			all = append(all, a.responses...)
			// initialize does not belong in a batch, but if it comes in
			// one, the client still needs its session id.
			if id := a.header.Get("Mcp-Session-Id"); id != "" && w.Header().Get("Mcp-Session-Id") == "" {
				w.Header().Set("Mcp-Session-Id", id)
			}
		}
		if len(all) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		out, err := json.Marshal(all)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// recovered is the answer to a batch element whose handling panicked with
// p: an Internal error with its id for a request, nothing for a
// notification. The panic and its stack go to log.
func recovered(log *zap.Logger, raw json.RawMessage, p any) forwarded {
	e, _ := readElement(raw)
	log.Error("panic while handling a message of a JSON-RPC batch; it is answered with an internal error",
		zap.String("method", e.Method), zap.Any("panic", p), zap.Stack("stack"))
	out := forwarded{status: http.StatusOK, header: http.Header{}}
	if e.isRequest() {
		out.responses = []json.RawMessage{rpcError(e.ID, mcp.INTERNAL_ERROR, internalErrorText(e.Method))}
	}
	return out
}

// MaxBatchConcurrency bounds the messages of one HTTP batch in flight at
// once, so a batch of thousands does not start thousands of calls.
const MaxBatchConcurrency = 16

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// forwarded is next's answer to one message of a batch: the JSON-RPC
// responses for the batch answer, and the HTTP answer as it came.
type forwarded struct {
	responses []json.RawMessage
	status    int
	header    http.Header
	body      []byte
}

// refusedAlike reports whether every forwarded message got the same HTTP
// error status, and returns the first such answer.
func refusedAlike(answers []forwarded) (forwarded, bool) {
	var first forwarded
	for _, a := range answers {
		if a.status < 400 || first.status != 0 && a.status != first.status {
			return forwarded{}, false
		}
		if first.status == 0 {
			first = a
		}
	}
	return first, first.status != 0
}

// forward runs one message through next as a POST of its own. Where
// answers come in the body (answersInBody: streamable HTTP, not legacy SSE,
// whose answers travel on the event stream), a request always gets exactly
// one response: an answer that is not a JSON-RPC response (a plain-text HTTP
// error, an empty body) becomes an error response with the request's id.
// An error the handler could not tie to an id gets the request's.
// Notifications and responses normally get none.
func forward(next http.Handler, r *http.Request, msg []byte, answersInBody bool) forwarded {
	e, _ := readElement(msg)
	sub := r.Clone(r.Context())
	sub.Body = io.NopCloser(bytes.NewReader(msg))
	sub.ContentLength = int64(len(msg))
	rec := &recorder{header: http.Header{}}
	next.ServeHTTP(rec, sub)
	out := forwarded{status: rec.status, header: rec.header, body: rec.body.Bytes()}
	if out.status == 0 {
		out.status = http.StatusOK
	}
	problem := "the server sent no response"
	t := bytes.TrimSpace(out.body)
	switch {
	case strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream"):
		out.responses = sseResponses(t)
	case len(t) > 0 && t[0] == '{' && json.Valid(t):
		out.responses = []json.RawMessage{append(json.RawMessage{}, t...)}
	case len(t) > 0:
		problem = string(t) // a plain-text error (http.Error)
	case out.status >= 400:
		problem = fmt.Sprintf("HTTP %d %s", out.status, http.StatusText(out.status))
	}
	if !e.isRequest() {
		return out
	}
	if len(out.responses) == 0 {
		if answersInBody || out.status >= 400 {
			out.responses = []json.RawMessage{rpcError(e.ID, mcp.INTERNAL_ERROR, problem)}
		}
		return out
	}
	for i, resp := range out.responses {
		var got batchElement
		if json.Unmarshal(resp, &got) == nil && !hasID(got.ID) {
			out.responses[i] = withID(resp, e.ID)
		}
	}
	return out
}

// withID returns the response resp with its id set to id.
func withID(resp, id json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(resp, &m) != nil {
		return resp
	}
	m["id"] = id
	b, err := json.Marshal(m)
	if err != nil {
		return resp
	}
	return b
}

// sseResponses picks the JSON-RPC responses (an id, no method) out of a
// server-sent event stream.
func sseResponses(stream []byte) []json.RawMessage {
	var out []json.RawMessage
	for _, event := range strings.Split(strings.ReplaceAll(string(stream), "\r\n", "\n"), "\n\n") {
		var data []string
		for _, line := range strings.Split(event, "\n") {
			if v, ok := strings.CutPrefix(line, "data:"); ok {
				data = append(data, strings.TrimPrefix(v, " "))
			}
		}
		if len(data) == 0 {
			continue
		}
		msg := json.RawMessage(strings.Join(data, "\n"))
		var e batchElement
		if json.Unmarshal(msg, &e) == nil && e.Method == "" && hasID(e.ID) {
			out = append(out, msg)
		}
	}
	return out
}

// recorder is the http.ResponseWriter (and Flusher, which mcp-go's
// streaming needs) a batch element is answered into.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

func (r *recorder) Flush() {}
