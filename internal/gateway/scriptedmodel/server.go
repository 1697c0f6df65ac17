// Package scriptedmodel runs a scripted model API: a real HTTP server on
// loopback speaking the Anthropic Messages API (JSON and SSE) and OpenAI
// Chat Completions (JSON and SSE chunks), whose answers come from a Go
// function the caller supplies. It records every request it receives, answers
// with the providers' error bodies on demand (429, 529, 500, ...), can stall
// a stream part way, and reports requests that ended before their answer
// did (a client or a gateway that hung up).
//
// It stands in for the one thing a test or a benchmark cannot run here, a
// model; the wire formats are the providers' own, so the official SDKs read
// its answers. It is not test-support code: the mcproxy binary links it for
// `mcproxy bench gateway`, so it serves through package loopback, not
// httptest, and imports no testing (the test helpers that drive it live in
// gatewaytest).
package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mcproxy/mcproxy/internal/loopback"
)

// Script decides the reply to one request. It runs on the server's handler
// goroutine, once per request, and may inspect everything recorded so far.
type Script func(r *Request) Reply

// Request is one request as the server received it.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq    int
	Method string
	// Path and RawQuery are the URL's, unescaped path first.
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Model and Stream are read from a JSON body ("model", "stream");
	// zero when the body has neither.
	Model  string
	Stream bool
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
}

// JSON decodes the body into a generic map (nil if it is not an object).
func (r *Request) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Messages returns the body's "messages" array, each element raw.
func (r *Request) Messages() []json.RawMessage {
	var b struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Messages
}

// Server is a running scripted model API. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the server's base, e.g. http://127.0.0.1:41234; the providers'
	// paths (/v1/messages, /v1/chat/completions, ...) hang below it.
	URL string

	srv     *loopback.Server
	script  Script
	closing chan struct{}
	once    sync.Once

	mu      sync.Mutex
	reqs    []*Request
	aborted []int
	ended   chan struct{} // closed and replaced when a request is aborted
	nextID  int
	seq     int
}

// New starts a server on a free loopback port answering with script; Close
// stops it. Like httptest.NewServer, whose place it takes, it panics when no
// loopback port can be had: a caller that can report the error uses Start.
func New(script Script) *Server {
	s, err := Start(script)
	if err != nil {
		panic(err)
	}
	return s
}

// Start is New returning the error instead of panicking.
func Start(script Script) (*Server, error) {
	s := &Server{script: script, closing: make(chan struct{}), ended: make(chan struct{})}
	srv, err := loopback.Listen(http.HandlerFunc(s.serve))
	if err != nil {
		return nil, fmt.Errorf("starting the scripted model: %w", err)
	}
	s.srv, s.URL = srv, srv.URL
	return s, nil
}

// Close releases every stalled answer and stops the server, waiting for
// the requests in flight to finish.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	s.srv.Close()
}

// Requests returns the requests received so far, in arrival order. The
// values are shared; do not modify them.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Drain returns the requests received so far and forgets them, so a long
// run does not hold every body; Seq numbering goes on.
func (s *Server) Drain() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.reqs
	s.reqs = nil
	return out
}

// Aborted returns the Seq of every request whose answer was cut short
// because the request's connection ended first, and a channel closed at the
// next such event.
func (s *Server) Aborted() ([]int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.aborted...), s.ended
}

func (s *Server) abort(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = append(s.aborted, seq)
	close(s.ended)
	s.ended = make(chan struct{})
}

func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s%06d", prefix, s.nextID)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	var head struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if json.Unmarshal(body, &head) == nil {
		req.Model, req.Stream, req.IncludeUsage = head.Model, head.Stream, head.StreamOptions.IncludeUsage
	}
	s.mu.Lock()
	s.seq++
	req.Seq = s.seq
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	reply := s.script(req)
	if reply.Model == "" {
		reply.Model = req.Model
	}
	a := answer{s: s, w: w, r: r, req: req, reply: reply}
	switch {
	case reply.Raw != nil:
		a.raw()
	case reply.Status != 0:
		a.errorBody()
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		a.countTokens()
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		a.anthropic()
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		a.openai()
	default:
		a.reply.Status, a.reply.ErrorType, a.reply.ErrorMessage = http.StatusNotFound, "not_found_error", "no scripted route for "+r.Method+" "+r.URL.Path
		a.errorBody()
	}
}

// answer writes one reply.
type answer struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	req   *Request
	reply Reply
}

func (a *answer) openAIPath() bool { return strings.HasSuffix(a.r.URL.Path, "/chat/completions") }

func (a *answer) raw() {
	for k, vs := range a.reply.Raw.Header {
		for _, v := range vs {
			a.w.Header().Add(k, v)
		}
	}
	status := a.reply.Raw.Status
	if status == 0 {
		status = http.StatusOK
	}
	a.w.WriteHeader(status)
	_, _ = a.w.Write(a.reply.Raw.Body)
}

// errorBody answers reply.Status with the provider's error shape.
func (a *answer) errorBody() {
	typ, msg := a.reply.ErrorType, a.reply.ErrorMessage
	if typ == "" {
		typ = defaultErrorType(a.reply.Status, a.openAIPath())
	}
	if msg == "" {
		msg = http.StatusText(a.reply.Status)
	}
	var body any
	if a.openAIPath() {
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": typ}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
		a.w.Header().Set("request-id", a.s.id("req_gwt_"))
	}
	if a.reply.Status == http.StatusTooManyRequests {
		a.w.Header().Set("retry-after", "0")
	}
	a.w.Header().Set("Content-Type", "application/json")
	a.w.WriteHeader(a.reply.Status)
	_ = json.NewEncoder(a.w).Encode(body)
}

func defaultErrorType(status int, openai bool) string {
	switch {
	case openai && status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case openai && status >= 500:
		return "server_error"
	case openai:
		return "invalid_request_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == 529:
		return "overloaded_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}

func (a *answer) countTokens() {
	n := a.reply.Usage.InputTokens
	if n == 0 {
		n = EstimateTokens(a.req.Body)
	}
	a.writeJSON(map[string]any{"input_tokens": n})
}

func (a *answer) writeJSON(v any) {
	if !a.stall(0) {
		return
	}
	a.w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(a.w).Encode(v)
}

// stall holds the answer when reply.Stall is set and sent events (0 for a
// JSON answer) equal reply.StallAfter, until the request ends or the server
// closes. It reports whether to go on.
func (a *answer) stall(sent int) bool {
	if !a.reply.Stall || a.reply.StallAfter != sent {
		return true
	}
	select {
	case <-a.r.Context().Done():
		a.s.abort(a.req.Seq)
	case <-a.s.closing:
	}
	return false
}

// EstimateTokens is the server's stand-in for a tokenizer: a quarter of the
// bytes, at least 1.
func EstimateTokens(b []byte) int { return max(1, len(b)/4) }

// sse writes server-sent events, flushing each.
type sse struct {
	a    *answer
	sent int
	dead bool
	// failure renders the provider's error event for reply.StreamError.
	failure func(*StreamError) (name string, data any)
}

// send writes one event, or the scripted error event in its place when the
// stream is due to fail here. It reports false once the answer must stop.
func (e *sse) send(name string, v any) bool {
	if se := e.a.reply.StreamError; se != nil && e.sent == se.After {
		e.json(e.failure(se))
		e.dead = true
		return false
	}
	return e.json(name, v)
}

// event writes one event (name may be empty for OpenAI's data-only
// stream). It reports false once the answer must stop.
func (e *sse) event(name string, data []byte) bool {
	if e.dead {
		return false
	}
	if !e.a.stall(e.sent) {
		e.dead = true
		return false
	}
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := e.a.w.Write(b.Bytes()); err != nil {
		e.a.s.abort(e.a.req.Seq)
		e.dead = true
		return false
	}
	if f, ok := e.a.w.(http.Flusher); ok {
		f.Flush()
	}
	e.sent++
	if e.a.r.Context().Err() != nil {
		e.a.s.abort(e.a.req.Seq)
		e.dead = true
		return false
	}
	return true
}

func (e *sse) json(name string, v any) bool {
	b, err := json.Marshal(v)
	if err != nil { // only the server's own maps are encoded; cannot happen
		e.dead = true
		return false
	}
	return e.event(name, b)
}

func (a *answer) startSSE(failure func(*StreamError) (string, any)) *sse {
	a.w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	a.w.Header().Set("Cache-Control", "no-cache")
	a.w.WriteHeader(http.StatusOK)
	return &sse{a: a, failure: failure}
}

// chunks splits s into pieces of at most n runes (one piece when n <= 0).
func chunks(s string, n int) []string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return []string{s}
	}
	var out []string
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
