package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// JSON-RPC batches: protocol versions up to 2025-03-26 let a client send
// several messages as one JSON array, and a receiver must take them; mcp-go
// takes one message at a time. The front splits a batch into its messages,
// hands each to mcp-go as if it had come alone, and answers with the array
// of their responses (in any order, as JSON-RPC allows). A batch of
// notifications and responses only gets no answer (202 over HTTP).

// batchError is a JSON-RPC error response with a null id, for a batch or a
// batch element that cannot be read as a message.
func batchError(code int, message string) json.RawMessage {
	return rpcError(nil, code, message)
}

// rpcError is a JSON-RPC error response to the request with id (nil: null).
func rpcError(id json.RawMessage, code int, message string) json.RawMessage {
	var idv any = id
	if !hasID(id) {
		idv = nil
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      idv,
		"error":   map[string]any{"code": code, "message": message},
	})
	return b
}

// batchElement is what the front needs to know of one message.
type batchElement struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// cancels returns the id of the request a notifications/cancelled message
// cancels, or nil.
func (e batchElement) cancels() json.RawMessage {
	if e.Method != "notifications/cancelled" {
		return nil
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(e.Params, &p) != nil {
		return nil
	}
	return p.RequestID
}

// isRequest: a request has a method and an id; a response to it is owed.
func (e batchElement) isRequest() bool { return e.Method != "" && hasID(e.ID) }

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// idKey is a canonical form of a JSON-RPC id (1, 1.0 and "1" differ as
// JSON-RPC ids, but 1 and 1.0 do not).
func idKey(id json.RawMessage) string {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return string(id)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parseBatch reads a batch: its elements, or the error response for a
// batch that is not a JSON array of at least one element.
func parseBatch(data []byte) ([]json.RawMessage, json.RawMessage) {
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		return nil, batchError(-32700, fmt.Sprintf("the batch is not a valid JSON array: %v", err))
	}
	if len(elems) == 0 {
		return nil, batchError(-32600, "empty batch: send at least one message")
	}
	return elems, nil
}

// readElement decodes one batch element; ok is false for anything that is
// not a JSON object (answered with an Invalid Request error).
func readElement(raw json.RawMessage) (batchElement, bool) {
	var e batchElement
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &e) != nil {
		return e, false
	}
	return e, true
}

const invalidElement = "invalid request: each element of a batch must be a JSON-RPC message object"

// firstByte returns the first byte of r that is not JSON whitespace,
// leaving it unread (0 at EOF).
func firstByte(r *bufio.Reader) byte {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		_ = r.UnreadByte()
		return c
	}
}

// --- stdio ---------------------------------------------------------------

// stdioBatches sits between mcp-go's stdio server and the client: split
// turns each batch line of the input into one line per message, and Write
// (mcp-go's output) holds back the responses to a batch's requests until
// all of them are in, then writes them as one array line. Every other line
// passes through as it is.
type stdioBatches struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	// pending maps the id key of a request sent in a batch to its batch.
	pending map[string]*stdioBatch
}

type stdioBatch struct {
	owed      int
	responses []json.RawMessage
}

func newStdioBatches(out io.Writer) *stdioBatches {
	return &stdioBatches{out: out, pending: map[string]*stdioBatch{}}
}

// Write takes mcp-go's output, which may arrive in pieces, line by line.
func (s *stdioBatches) Write(p []byte) (int, error) {
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
		return len(p), nil
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
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
// before its line goes on, so its response cannot come back first.
func (s *stdioBatches) split(in io.Reader) *io.PipeReader {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadBytes('\n')
			if t := bytes.TrimSpace(line); len(t) > 0 {
				var werr error
				if t[0] == '[' {
					werr = s.splitBatch(t, pw)
				} else {
					s.watchCancel(t)
					_, werr = pw.Write(line)
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
	}()
	return pr
}

// splitBatch registers a batch's requests and writes its messages to w.
func (s *stdioBatches) splitBatch(data []byte, w io.Writer) error {
	elems, bad := parseBatch(data)
	if bad != nil {
		return s.writeLine(bad)
	}
	b := &stdioBatch{}
	var lines [][]byte
	s.mu.Lock()
	for _, raw := range elems {
		e, ok := readElement(raw)
		switch {
		case !ok:
			b.responses = append(b.responses, batchError(-32600, invalidElement))
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
	err := s.finish(b)
	s.mu.Unlock()
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

func (s *stdioBatches) writeLine(msg json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.out.Write(append(append([]byte{}, msg...), '\n'))
	return err
}

// --- HTTP ----------------------------------------------------------------

// batchHTTP passes a POST whose body is a batch to next one message at a
// time (each as a POST of its own, with the same headers, concurrently).
// With answersInBody (streamable HTTP) it answers with the array of their
// responses as JSON; responses that next streams as server-sent events are
// taken from the stream, and what else the stream carried (progress, log
// messages) has no place in a batch answer. Without (legacy SSE's
// /message, whose answers travel on the event stream) each message simply
// goes on by itself and the batch gets 202. Every other request reaches
// next untouched.
func batchHTTP(next http.Handler, answersInBody bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		br := bufio.NewReader(r.Body)
		r.Body = struct {
			io.Reader
			io.Closer
		}{br, r.Body}
		if firstByte(br) != '[' {
			next.ServeHTTP(w, r)
			return
		}
		data, err := io.ReadAll(br)
		if err != nil {
			http.Error(w, fmt.Sprintf("reading the request body: %v", err), http.StatusBadRequest)
			return
		}
		elems, bad := parseBatch(data)
		if bad != nil {
			writeJSON(w, http.StatusBadRequest, bad)
			return
		}
		answers := make([]forwarded, len(elems))
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxBatchConcurrency)
		for i, raw := range elems {
			if _, ok := readElement(raw); !ok {
				answers[i].responses = []json.RawMessage{batchError(-32600, invalidElement)}
				continue
			}
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				answers[i] = forward(next, r, bytes.TrimSpace(raw), answersInBody)
			}()
		}
		wg.Wait()
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

// maxBatchConcurrency bounds the messages of one HTTP batch in flight at
// once, so a batch of thousands does not start thousands of calls.
const maxBatchConcurrency = 16

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
			out.responses = []json.RawMessage{rpcError(e.ID, -32603, problem)}
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
