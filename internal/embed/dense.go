package embed

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// DefaultDepth is how many hits each ranking contributes to a fusion: deep
// enough that a tool ranked well by one method and poorly by the other still
// surfaces, shallow enough to stay cheap.
const DefaultDepth = 50

// CacheDirName is the vector cache's directory under data_dir.
const CacheDirName = "embeddings-cache"

// Options configures New. Every zero value means the documented default.
type Options struct {
	// Logger receives outage and cache warnings. nil means no logging.
	Logger *zap.Logger
	// CacheDir holds vectors across restarts (typically
	// <data_dir>/embeddings-cache). Empty means vectors live in memory only.
	CacheDir string
	// QueryPrefix and DocumentPrefix are prepended to queries and tool
	// texts before embedding (task prefixes some models need).
	QueryPrefix, DocumentPrefix string
	// BatchSize is how many tool texts one Embed call carries while
	// indexing. Zero means config.DefaultEmbedBatchSize.
	BatchSize int
	// QueryTimeout bounds embedding one query. Zero means
	// config.DefaultEmbedQueryTimeout.
	QueryTimeout time.Duration
	// RetryInterval is how long the provider rests after a failure before
	// it is tried again. Zero means config.DefaultEmbedRetryInterval.
	RetryInterval time.Duration
	// RRFK is the fusion constant of Hybrid. Zero means config.DefaultRRFK.
	RRFK int
	// DenseWeight weighs the dense ranking in Hybrid against BM25's (1 =
	// equal). Zero means 1.
	DenseWeight float64
	// Depth is how many dense hits Hybrid fuses, and how many BM25 hits the
	// caller should pass it. Zero means DefaultDepth.
	Depth int
	// QueryCacheSize is how many recent query vectors are kept in memory.
	// Zero means DefaultQueryCacheSize; negative means none (every search
	// embeds its query, e.g. to measure that cost).
	QueryCacheSize int
	// Now is the clock for retry intervals. nil means time.Now.
	Now func() time.Time

	afterWork func() // tests: called after each pass of the worker
}

// Dense ranks tools by the cosine similarity of their embeddings to a
// query's. Tools are added and replaced per server, like the BM25 index.
// It is safe for concurrent use. A nil *Dense is valid and means dense
// retrieval is off: it holds nothing and Hybrid returns the BM25 hits.
type Dense struct {
	emb      Embedder
	fp       string
	endpoint string
	opts     Options
	log      *zap.Logger
	cache    *diskCache

	ctx    context.Context // cancelled by Close; bounds the worker
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan struct{} // buffered 1: a signal that tools wait for vectors
	fillMu sync.Mutex    // one embedding pass at a time (worker or Sync)

	mu       sync.Mutex
	servers  map[string][]doc
	refs     map[string]int       // cache key → how many docs use it
	vecs     map[string][]float32 // cache key → unit vector
	pending  map[string]string    // cache key → text, for keys without a vector
	rejected map[string]bool      // cache keys whose text the provider refuses
	snap     *snapshot            // nil after a change; rebuilt by the next search
	down     bool
	retryAt  time.Time
	closed   bool
	warned   bool // a cache write failure has been logged
	queries  *lru // recent query vectors; nil when off
}

type doc struct {
	id, server, name string
	key, text        string
}

// New returns a Dense over e (required) and starts its worker, which
// embeds tools in the background; Close stops it. New does not contact the
// provider.
func New(e Embedder, opts Options) *Dense {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = config.DefaultEmbedBatchSize
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = config.DefaultEmbedQueryTimeout
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = config.DefaultEmbedRetryInterval
	}
	if opts.RRFK <= 0 {
		opts.RRFK = config.DefaultRRFK
	}
	if opts.DenseWeight <= 0 {
		opts.DenseWeight = 1
	}
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.QueryCacheSize == 0 {
		opts.QueryCacheSize = DefaultQueryCacheSize
	}
	d := &Dense{
		emb:      e,
		fp:       e.Fingerprint(),
		opts:     opts,
		log:      opts.Logger,
		servers:  map[string][]doc{},
		refs:     map[string]int{},
		vecs:     map[string][]float32{},
		pending:  map[string]string{},
		rejected: map[string]bool{},
	}
	if ep, ok := e.(interface{ Endpoint() string }); ok {
		d.endpoint = ep.Endpoint()
	}
	if opts.CacheDir != "" {
		d.cache = &diskCache{dir: opts.CacheDir}
	}
	if opts.QueryCacheSize > 0 {
		d.queries = newLRU(opts.QueryCacheSize)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.wake = make(chan struct{}, 1)
	d.wg.Add(1)
	goroutine.Go(d.log, "dense indexer", d.run)
	return d
}

// FromConfig builds the Dense the embeddings section describes, caching
// under <data_dir>/embeddings-cache. It returns nil, nil when the section is
// off; a nil *Dense is safe to use. cfg should have had defaults applied.
func FromConfig(cfg *config.Config, logger *zap.Logger) (*Dense, error) {
	e := cfg.Embeddings
	if !e.IsEnabled() {
		return nil, nil
	}
	c, err := NewClient(ClientOptions{
		URL: e.URL, Model: e.Model, APIKey: e.APIKey, Dimensions: e.Dimensions,
		BatchSize: e.BatchSize, Timeout: e.Timeout.Std(),
	})
	if err != nil {
		return nil, err
	}
	return New(c, Options{
		Logger:         logger,
		CacheDir:       filepath.Join(cfg.DataDir, CacheDirName),
		QueryPrefix:    e.QueryPrefix,
		DocumentPrefix: e.DocumentPrefix,
		BatchSize:      e.BatchSize,
		QueryTimeout:   e.QueryTimeout.Std(),
		RetryInterval:  e.RetryInterval.Std(),
		RRFK:           e.RRFK,
		DenseWeight:    float64(e.DenseWeightPct) / 100,
	}), nil
}

// Depth is how many BM25 hits the caller should fetch for Hybrid (at least
// the answer's limit). Zero for a nil *Dense.
func (d *Dense) Depth() int {
	if d == nil {
		return 0
	}
	return d.opts.Depth
}

// Upsert replaces every tool of server with tools (tools whose ServerName
// differs are filed under server anyway, as the BM25 index does). It does
// no I/O and never blocks on the provider: tools whose text has a vector in
// memory are searchable at once, the others are queued for the worker,
// which takes their vectors from the disk cache or, in batches, from the
// provider. While the provider is down they wait (BM25 still finds them)
// and are embedded once a query embedding succeeds again. The only error is
// a closed Dense.
func (d *Dense) Upsert(server string, tools []config.ToolMetadata) error {
	if d == nil {
		return nil
	}
	docs := make([]doc, 0, len(tools))
	for _, t := range tools {
		text := d.opts.DocumentPrefix + ToolText(t)
		docs = append(docs, doc{
			id: config.ToolID(server, t.Name), server: server, name: t.Name,
			key: cacheKey(d.fp, text), text: text,
		})
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return errors.New("indexing tools for dense search: closed")
	}
	d.replace(server, docs)
	waiting := len(d.pending) > 0
	d.mu.Unlock()
	if waiting {
		d.notify()
	}
	return nil
}

// Sync embeds every queued tool now, in the caller's goroutine: from the
// disk cache, then from the provider (even while it rests after a failure).
// It returns when all tools have vectors, or with the first error. Servers
// need not call it (the worker does the same in the background); it is for
// tools and tests that must not search before indexing is complete.
func (d *Dense) Sync(ctx context.Context) error {
	if d == nil {
		return nil
	}
	return d.embedPending(ctx, true)
}

// Remove drops every tool of server.
func (d *Dense) Remove(server string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.replace(server, nil)
	d.mu.Unlock()
}

// Stats counts tools: all of them, those with a vector, those waiting for
// the provider, and those whose text the provider refuses (BM25 alone finds
// them). Down reports a current outage.
type Stats struct {
	Tools, Embedded, Pending, Rejected int
	Down                               bool
}

// Stats reports how far indexing has got.
func (d *Dense) Stats() Stats {
	if d == nil {
		return Stats{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var s Stats
	for _, docs := range d.servers {
		for _, dc := range docs {
			s.Tools++
			switch {
			case d.vecs[dc.key] != nil:
				s.Embedded++
			case d.rejected[dc.key]:
				s.Rejected++
			}
		}
	}
	s.Pending = s.Tools - s.Embedded - s.Rejected
	s.Down = d.down
	return s
}

// Close stops the worker and waits for it. Searches still answer from what
// is in memory; Upsert fails. Calling Close again does nothing.
func (d *Dense) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	return nil
}

// replace swaps server's docs; d.mu must be held. New keys are counted
// before old ones are released, so a tool whose text did not change keeps
// its vector.
func (d *Dense) replace(server string, docs []doc) {
	for _, dc := range docs {
		d.refs[dc.key]++
		if d.vecs[dc.key] == nil && !d.rejected[dc.key] {
			d.pending[dc.key] = dc.text
		}
	}
	for _, dc := range d.servers[server] {
		if d.refs[dc.key]--; d.refs[dc.key] <= 0 {
			delete(d.refs, dc.key)
			delete(d.vecs, dc.key)
			delete(d.pending, dc.key)
			delete(d.rejected, dc.key)
		}
	}
	if len(docs) == 0 {
		delete(d.servers, server)
	} else {
		d.servers[server] = docs
	}
	d.snap = nil
}
