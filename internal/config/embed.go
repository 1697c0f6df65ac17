package config

import (
	"strings"
	"time"
)

// EmbeddingsConfig is the "embeddings" object: optional dense retrieval that
// ranks tools by the cosine similarity of embedding vectors from a provider
// speaking the OpenAI-compatible POST /v1/embeddings API (Ollama, LM Studio,
// llama.cpp's server, vLLM, OpenAI), fused with the BM25 ranking. It is off
// unless url is set: an absent section leaves every field zero.
//
//	"embeddings": {
//	  "url": "http://127.0.0.1:11434/v1",
//	  "model": "nomic-embed-text",
//	  "query_prefix": "search_query: ",
//	  "document_prefix": "search_document: "
//	}
type EmbeddingsConfig struct {
	// Enabled, when false, keeps the section configured but unused. nil
	// means true whenever url is set.
	Enabled *bool `json:"enabled,omitempty"`
	// URL is the provider's API base, e.g. "http://127.0.0.1:11434/v1"
	// (Ollama), "http://127.0.0.1:1234/v1" (LM Studio) or
	// "https://api.openai.com/v1"; requests go to <url>/embeddings. A URL
	// that already ends in /embeddings is used as it is.
	URL string `json:"url,omitempty"`
	// Model is the embedding model's name as the provider knows it.
	// Required with url.
	Model string `json:"model,omitempty"`
	// APIKey, when set, is sent as "Authorization: Bearer <key>". Write it
	// as ${VAR} to keep it out of the file; it is never logged.
	APIKey string `json:"api_key,omitempty"`
	// Dimensions, when non-zero, asks the provider for vectors of that
	// length (only some models support it, e.g. OpenAI's
	// text-embedding-3-*). Zero means the model's native size.
	Dimensions int `json:"dimensions,omitempty"`
	// QueryPrefix and DocumentPrefix are prepended to search queries and to
	// tool texts before embedding, for models trained with task prefixes
	// (nomic-embed-text: "search_query: " / "search_document: "; e5:
	// "query: " / "passage: "). Empty means none.
	QueryPrefix    string `json:"query_prefix,omitempty"`
	DocumentPrefix string `json:"document_prefix,omitempty"`
	// BatchSize is how many tool texts go in one request. Zero means
	// DefaultEmbedBatchSize.
	BatchSize int `json:"batch_size,omitempty"`
	// Timeout bounds one request embedding a batch of tool texts. Zero
	// means DefaultEmbedTimeout.
	Timeout Duration `json:"timeout,omitempty"`
	// QueryTimeout bounds embedding one retrieve_tools query; past it the
	// search answers from BM25 alone. Zero means DefaultEmbedQueryTimeout.
	QueryTimeout Duration `json:"query_timeout,omitempty"`
	// RetryInterval is how long dense search stays off after the provider
	// failed before it is tried again. Zero means DefaultEmbedRetryInterval.
	RetryInterval Duration `json:"retry_interval,omitempty"`
	// RRFK is the reciprocal rank fusion constant: a tool at rank r in a
	// list contributes weight/(rrf_k + r). Larger values flatten the
	// difference between ranks. Zero means DefaultRRFK.
	RRFK int `json:"rrf_k,omitempty"`
	// DenseWeightPct weighs the dense ranking against BM25's, in percent:
	// 100 counts both equally, 50 gives dense half of BM25's say. Zero
	// means DefaultDenseWeightPct.
	DenseWeightPct int `json:"dense_weight_pct,omitempty"`
}

// Embeddings defaults.
const (
	DefaultEmbedBatchSize     = 64
	DefaultEmbedTimeout       = 30 * time.Second
	DefaultEmbedQueryTimeout  = 2 * time.Second
	DefaultEmbedRetryInterval = 30 * time.Second
	DefaultRRFK               = 60
	DefaultDenseWeightPct     = 100
)

// Bounds on the embeddings knobs. 2048 inputs per request is OpenAI's own
// limit; 65536 dimensions is far beyond any model and only catches typos.
const (
	MaxEmbedBatchSize  = 2048
	MaxEmbedDimensions = 65536
	MaxRRFK            = 1000
	MaxDenseWeightPct  = 1000
)

// IsEnabled reports whether dense retrieval is on: url is set and enabled
// is absent or true.
func (e EmbeddingsConfig) IsEnabled() bool {
	return e.URL != "" && (e.Enabled == nil || *e.Enabled)
}

// applyDefaults fills the zero knobs of a section that names a provider; an
// absent section (no url) stays zero so a config without one is unchanged.
func (e *EmbeddingsConfig) applyDefaults() {
	if e.URL == "" {
		return
	}
	if e.BatchSize == 0 {
		e.BatchSize = DefaultEmbedBatchSize
	}
	if e.Timeout == 0 {
		e.Timeout = Duration(DefaultEmbedTimeout)
	}
	if e.QueryTimeout == 0 {
		e.QueryTimeout = Duration(DefaultEmbedQueryTimeout)
	}
	if e.RetryInterval == 0 {
		e.RetryInterval = Duration(DefaultEmbedRetryInterval)
	}
	if e.RRFK == 0 {
		e.RRFK = DefaultRRFK
	}
	if e.DenseWeightPct == 0 {
		e.DenseWeightPct = DefaultDenseWeightPct
	}
}

// validate returns the problems with the embeddings object, paths under
// path. It never echoes the URL or the API key: either may hold a secret.
func (e EmbeddingsConfig) validate(path string) []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(joinPath(path, field), format, args...))
	}
	if e.URL != "" {
		if msg := checkURL(e.URL); msg != "" {
			add("url", "%s", msg)
		}
		if strings.TrimSpace(e.Model) == "" {
			add("model", "is required with url: name the embedding model, e.g. \"nomic-embed-text\" (Ollama) or \"text-embedding-3-small\" (OpenAI)")
		}
	} else if e.Model != "" || e.APIKey != "" {
		add("url", "is required with model or api_key: set the provider's API base, e.g. \"http://127.0.0.1:11434/v1\" for Ollama")
	}
	if strings.ContainsAny(e.APIKey, "\r\n\x00") {
		add("api_key", "contains a line break or NUL")
	}
	ranges := []struct {
		field     string
		v, lo, hi int
	}{
		{"dimensions", e.Dimensions, 1, MaxEmbedDimensions},
		{"batch_size", e.BatchSize, 1, MaxEmbedBatchSize},
		{"rrf_k", e.RRFK, 1, MaxRRFK},
		{"dense_weight_pct", e.DenseWeightPct, 1, MaxDenseWeightPct},
	}
	for _, r := range ranges {
		if r.v != 0 && (r.v < r.lo || r.v > r.hi) {
			add(r.field, "%d is out of range: want %d to %d (leave it out for the default)", r.v, r.lo, r.hi)
		}
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"timeout", e.Timeout}, {"query_timeout", e.QueryTimeout}, {"retry_interval", e.RetryInterval}} {
		if d.v < 0 {
			add(d.field, "must be > 0, got %s", d.v)
		}
	}
	return errs
}
