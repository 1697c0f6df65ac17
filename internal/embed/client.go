package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Embedder turns texts into vectors. *Client is the production one.
type Embedder interface {
	// Embed returns one vector per text, in the order of texts, all of the
	// same length.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Fingerprint names the vector space (model and dimensions): vectors
	// from embedders with different fingerprints are never mixed, and the
	// disk cache keys on it.
	Fingerprint() string
}

// ClientOptions configures NewClient.
type ClientOptions struct {
	// URL is the API base ("http://127.0.0.1:11434/v1"); requests go to
	// URL + "/embeddings", or to URL itself when it already ends in
	// "/embeddings". Required.
	URL string
	// Model is the embedding model's name. Required.
	Model string
	// APIKey, when non-empty, is sent as a bearer token. It never appears
	// in an error.
	APIKey string
	// Dimensions, when non-zero, is sent as "dimensions" and every vector
	// must have that length.
	Dimensions int
	// BatchSize is the most texts sent in one request. Zero means
	// config.DefaultEmbedBatchSize.
	BatchSize int
	// Timeout bounds each request. Zero means config.DefaultEmbedTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests. nil means a client of our own (no
	// overall timeout: Timeout and the context bound each request).
	HTTPClient *http.Client
}

// Client calls an OpenAI-compatible embeddings endpoint. It is safe for
// concurrent use.
type Client struct {
	endpoint   string // full URL, may carry credentials: never printed
	display    string // scheme://host/path, safe to print
	model      string
	apiKey     string
	dimensions int
	batchSize  int
	timeout    time.Duration
	http       *http.Client
}

// NewClient checks opts and returns a client. It does not contact the
// provider.
func NewClient(opts ClientOptions) (*Client, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("embeddings url: want an http:// or https:// URL with a host")
	}
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("embeddings model: is required")
	}
	if opts.Dimensions < 0 || opts.BatchSize < 0 || opts.Timeout < 0 {
		return nil, errors.New("embeddings: dimensions, batch size and timeout must not be negative")
	}
	if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/embeddings") {
		u.Path = strings.TrimRight(u.Path, "/") + "/embeddings"
		u.RawPath = ""
	}
	c := &Client{
		endpoint:   u.String(),
		display:    (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String(),
		model:      opts.Model,
		apiKey:     opts.APIKey,
		dimensions: opts.Dimensions,
		batchSize:  opts.BatchSize,
		timeout:    opts.Timeout,
		http:       opts.HTTPClient,
	}
	if c.batchSize == 0 {
		c.batchSize = config.DefaultEmbedBatchSize
	}
	if c.timeout == 0 {
		c.timeout = config.DefaultEmbedTimeout
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

// Endpoint is the URL requests go to, without credentials or query string:
// safe to log.
func (c *Client) Endpoint() string { return c.display }

// Fingerprint is the model name, plus the dimensions when set.
func (c *Client) Fingerprint() string {
	if c.dimensions > 0 {
		return c.model + "@" + strconv.Itoa(c.dimensions)
	}
	return c.model
}

// Embed embeds texts in batches of the configured size, one request at a
// time, and returns the vectors in the order of texts. Any failed batch
// fails the call. Errors name the endpoint (without credentials) and, for an
// HTTP error, the status and the provider's message.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.batchSize {
		batch := texts[start:min(start+c.batchSize, len(texts))]
		vecs, err := c.embedBatch(ctx, batch)
		if err != nil {
			if len(texts) > len(batch) {
				return nil, fmt.Errorf("embedding texts %d-%d of %d: %w", start+1, start+len(batch), len(texts), err)
			}
			return nil, err
		}
		if len(out) > 0 && len(vecs[0]) != len(out[0]) {
			return nil, fmt.Errorf("embedding texts: %s returned %d dimensions after %d", c.display, len(vecs[0]), len(out[0]))
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// StatusError is a non-2xx answer from the provider.
type StatusError struct {
	Code int
	// Message is the provider's error message (or the start of its body),
	// with the API key masked.
	Message string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("status %d %s", e.Code, http.StatusText(e.Code))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Embedding []float64 `json:"embedding"`
		Index     *int      `json:"index"`
	} `json:"data"`
}

// maxResponseBytes bounds what one answer may take: 2048 inputs of 3072
// dimensions written as JSON numbers stay well under it.
const maxResponseBytes = 256 << 20

func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embedRequest{Model: c.model, Input: texts, Dimensions: c.dimensions})
	if err != nil {
		return nil, fmt.Errorf("encoding embeddings request: %w", err)
	}
	limit := c.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < limit {
		limit = time.Until(dl).Round(time.Millisecond)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// timedOut turns a deadline (ours or the caller's) into an error that
	// says how long we waited; a cancellation stays a cancellation.
	timedOut := func(what string, err error) error {
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%s %s: no answer within %s: %w", what, c.display, limit, context.DeadlineExceeded)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", what, c.display, ctx.Err())
		}
		return fmt.Errorf("%s %s: %w", what, c.display, c.redact(err))
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building embeddings request: %w", c.redact(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, timedOut("posting to", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, timedOut("reading answer from", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("posting to %s: %w", c.display, &StatusError{Code: resp.StatusCode, Message: c.errorMessage(data)})
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("reading answer from %s: larger than %d bytes", c.display, maxResponseBytes)
	}
	var r embedResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding answer from %s: not an embeddings response: %v", c.display, err)
	}
	return c.checkVectors(r, len(texts))
}

// checkVectors orders the answer's vectors by their index and rejects an
// answer that does not hold exactly one finite vector per input, all of one
// (and the requested) length.
func (c *Client) checkVectors(r embedResponse, n int) ([][]float32, error) {
	if len(r.Data) != n {
		return nil, fmt.Errorf("answer from %s has %d embeddings for %d inputs", c.display, len(r.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range r.Data {
		at := i // a provider that leaves out "index" answers in input order
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, fmt.Errorf("answer from %s has a missing, repeated or out-of-range index %d", c.display, at)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("answer from %s has an empty embedding for input %d", c.display, at)
		}
		if c.dimensions > 0 && len(d.Embedding) != c.dimensions {
			return nil, fmt.Errorf("answer from %s has %d dimensions, want %d (does the model support \"dimensions\"?)", c.display, len(d.Embedding), c.dimensions)
		}
		if len(d.Embedding) != len(r.Data[0].Embedding) {
			return nil, fmt.Errorf("answer from %s mixes vectors of %d and %d dimensions", c.display, len(r.Data[0].Embedding), len(d.Embedding))
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
				return nil, fmt.Errorf("answer from %s has a non-finite value in embedding %d", c.display, at)
			}
			v[j] = float32(x)
		}
		out[at] = v
	}
	return out, nil
}

// errorMessage pulls the provider's message out of an error body: OpenAI
// and Ollama send {"error": {"message": ...}}, some servers {"error": "..."}
// or plain text. It is cut short and the API key masked, since the text ends
// up in logs.
func (c *Client) errorMessage(body []byte) string {
	var msg string
	var obj struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &obj) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(obj.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(obj.Error, &s) == nil && s != "":
			msg = s
		default:
			msg = obj.Message
		}
	}
	if msg == "" {
		msg = string(body)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if c.apiKey != "" {
		msg = strings.ReplaceAll(msg, c.apiKey, "***")
	}
	return truncate(msg, 300)
}

// redact strips the request URL (which may carry credentials or a key in
// its query) from a transport error, keeping the cause.
func (c *Client) redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
