// Package embedtest is a small embedding server for tests: an httptest
// server speaking the OpenAI-compatible POST /v1/embeddings wire format,
// backed by a deterministic toy model, with switches for the faults a real
// provider shows (errors, malformed answers, wrong counts, hangs).
//
// The toy model is NOT a language model and its rankings say nothing about
// retrieval quality with a real one. It hashes the stemmed words of a text
// into a fixed number of buckets (a hashed bag of words), after mapping a
// few dozen words to shared concepts through a built-in synonym table, so
// that a paraphrase such as "will I need an umbrella" lands near a weather
// tool although the two share no word. That is enough to show that dense
// retrieval and fusion are wired correctly, never how well they work.
package embedtest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"unicode"
)

// Fault makes the server misbehave.
type Fault int

const (
	// None answers correctly.
	None Fault = iota
	// Status500 answers 500 with an OpenAI-style error body.
	Status500
	// MalformedJSON answers 200 with a body that is not JSON.
	MalformedJSON
	// WrongCount answers with one embedding fewer than inputs.
	WrongCount
	// Hang never answers: the request waits until the client gives up or
	// the server closes.
	Hang
)

// Options configures New.
type Options struct {
	// Dimensions is the vector length. Zero means 64.
	Dimensions int
	// APIKey, when set, is the bearer token every request must carry;
	// others get 401.
	APIKey string
	// Model, when set, is the only model name accepted; others get 404.
	Model string
	// MaxInputBytes, when set, refuses a request holding any longer input
	// with 400, as providers do for inputs beyond the model's window.
	MaxInputBytes int
	// NoDimensions refuses any request that sets "dimensions" with 400, as
	// providers do for models with a fixed vector length.
	NoDimensions bool
}

// Server is a running test embedding server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the API base to configure, ending in /v1.
	URL string

	srv     *httptest.Server
	opts    Options
	closing chan struct{}

	mu       sync.Mutex
	fault    Fault
	requests int
	inputs   int
	batches  []int
	auths    []string
}

// New starts a server on a loopback port. Call Close when done.
func New(opts Options) *Server {
	if opts.Dimensions <= 0 {
		opts.Dimensions = 64
	}
	s := &Server{opts: opts, closing: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", s.handle)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close releases hanging requests and stops the server.
func (s *Server) Close() {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.srv.Close()
}

// SetFault switches the server's behaviour for the following requests.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// Requests is how many embedding requests arrived, failed ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Inputs is how many texts were embedded successfully.
func (s *Server) Inputs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs
}

// Batches lists the input count of each request, in arrival order.
func (s *Server) Batches() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.batches...)
}

// Authorizations lists each request's Authorization header.
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

type request struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Dimensions int             `json:"dimensions"`
}

type datum struct {
	Object    string    `json:"object"`
	Embedding []float32 `json:"embedding"`
	Index     int       `json:"index"`
}

type response struct {
	Object string  `json:"object"`
	Data   []datum `json:"data"`
	Model  string  `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	fault := s.fault
	s.auths = append(s.auths, r.Header.Get("Authorization"))
	s.mu.Unlock()

	if s.opts.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
		apiError(w, http.StatusUnauthorized, "Incorrect API key provided.")
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "request body is not JSON: "+err.Error())
		return
	}
	if req.Model == "" || (s.opts.Model != "" && req.Model != s.opts.Model) {
		apiError(w, http.StatusNotFound, "model \""+req.Model+"\" not found")
		return
	}
	// input is a string or an array of strings (token arrays are not
	// supported by this server).
	var inputs []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil || len(inputs) == 0 {
		apiError(w, http.StatusBadRequest, "input must be a string or a non-empty array of strings")
		return
	}
	for _, in := range inputs {
		if s.opts.MaxInputBytes > 0 && len(in) > s.opts.MaxInputBytes {
			apiError(w, http.StatusBadRequest, "input is longer than the model's context length")
			return
		}
	}
	if s.opts.NoDimensions && req.Dimensions > 0 {
		apiError(w, http.StatusBadRequest, "this model does not support dimensions")
		return
	}
	dims := s.opts.Dimensions
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}

	switch fault {
	case Status500:
		apiError(w, http.StatusInternalServerError, "the model crashed")
		return
	case MalformedJSON:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data": [{"embedding": [0.1, 0.2`))
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}

	resp := response{Object: "list", Model: req.Model}
	for i, in := range inputs {
		resp.Data = append(resp.Data, datum{Object: "embedding", Embedding: Embed(in, dims), Index: i})
		resp.Usage.PromptTokens += len(words(in))
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	if fault == WrongCount {
		resp.Data = resp.Data[:len(resp.Data)-1]
	}
	// Answer in reverse order: the index field, not the position, says
	// which input a vector belongs to, and clients must honour it.
	for i, j := 0, len(resp.Data)-1; i < j; i, j = i+1, j-1 {
		resp.Data[i], resp.Data[j] = resp.Data[j], resp.Data[i]
	}
	s.mu.Lock()
	s.inputs += len(inputs)
	s.batches = append(s.batches, len(inputs))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// concepts maps words to the concept they share with their paraphrases
// (keys are stemmed at start-up, so "shares" and "share" both hit). Tiny
// by design: just enough for tests to show a paraphrase bridged.
var concepts = map[string][]string{
	"weather":  {"weather", "umbrella", "rain", "rainy", "sunny", "forecast", "temperature", "cold", "hot"},
	"stock":    {"stock", "share", "equity", "ticker", "quote"},
	"cost":     {"price", "cost", "worth", "value"},
	"email":    {"email", "mail", "message", "inbox"},
	"deliver":  {"send", "deliver"},
	"repo":     {"repository", "repo", "project"},
	"issue":    {"issue", "bug", "ticket", "defect"},
	"document": {"file", "document", "doc"},
	"remove":   {"delete", "remove", "erase", "trash"},
	"calendar": {"calendar", "schedule", "meeting", "appointment"},
}

var synonyms = func() map[string]string {
	m := map[string]string{}
	for concept, ws := range concepts {
		for _, w := range ws {
			m[stem(w)] = "concept:" + concept
		}
	}
	return m
}()

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "i": true, "will": true, "to": true, "of": true, "for": true, "in": true,
	"is": true, "it": true, "and": true, "or": true, "my": true, "me": true, "do": true, "need": true, "what": true,
	"how": true, "on": true, "with": true, "be": true, "by": true, "at": true, "this": true, "that": true,
}

// Embed is the toy model: the unit vector of the text's hashed bag of
// stemmed, synonym-mapped words. Same text, same vector, always.
func Embed(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range words(text) {
		if stopWords[w] {
			continue
		}
		w = stem(w)
		if c, ok := synonyms[w]; ok {
			w = c
		}
		h := fnv.New64a()
		h.Write([]byte(w))
		x := h.Sum64()
		sign := float32(1)
		if x>>63 == 1 {
			sign = -1
		}
		v[x%uint64(dims)] += sign
	}
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum > 0 {
		inv := float32(1 / math.Sqrt(sum))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// words splits text into lower-case words, also at camelCase humps and
// underscores.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && len(cur) > 0 && unicode.IsLower(cur[len(cur)-1]) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// stem strips a few English suffixes: a crude stemmer, good enough that
// "forecasts", "forecasting" and "forecast" meet.
func stem(w string) string {
	for _, suf := range []string{"ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "s", "y", "e"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) {
			w = strings.TrimSuffix(w, suf)
			if suf == "ies" || suf == "ied" || suf == "y" {
				w += "i"
			}
			return w
		}
	}
	return w
}
