package embed

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/vec"
)

// DefaultDepth is how many hits each ranking contributes to a fusion: deep
// enough that a tool ranked well by one method and poorly by the other still
// surfaces, shallow enough to stay cheap.
const DefaultDepth = 50

// DefaultQueryCacheSize is how many recent query vectors Dense keeps.
// Agents repeat queries, and the profiler runs each query once per
// configuration; a cached query costs no round trip to the provider.
const DefaultQueryCacheSize = 256

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

// snapshot is an immutable view for searching: hits sorted by ID, with
// their vectors (shared with Dense.vecs, never written after storing).
type snapshot struct {
	dim  int
	hits []index.Hit
	vecs [][]float32
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
	go d.run()
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

// Search returns the k tools whose vectors are most similar to the query's,
// by cosine similarity, ties by ID. A recently seen query's vector comes
// from memory, even during an outage. It returns nil, nil when nothing is
// embedded yet (without embedding the query), ErrUnavailable (wrapped)
// while the provider rests after a failure, and the provider's error when
// the query embedding fails or takes longer than the query timeout; the
// caller then answers from BM25 alone (Hybrid does exactly that).
func (d *Dense) Search(ctx context.Context, query string, k int) ([]index.Hit, error) {
	if d == nil || k <= 0 || strings.TrimSpace(query) == "" {
		return nil, nil
	}
	snap := d.snapshot()
	if len(snap.hits) == 0 {
		// Nothing to rank, so no query to embed and no probe of the
		// provider: should tools be queued (an outage since start-up), let
		// the worker probe instead, or nothing would ever retry them.
		d.mu.Lock()
		waiting := len(d.pending) > 0
		d.mu.Unlock()
		if waiting {
			d.notify()
		}
		return nil, nil
	}
	text := d.opts.QueryPrefix + query
	if q, ok := d.queries.get(text); ok && len(q) == snap.dim {
		return snap.topK(q, k), nil
	}
	if !d.available() {
		return nil, fmt.Errorf("embedding query: %w", ErrUnavailable)
	}
	qctx, cancel := context.WithTimeout(ctx, d.opts.QueryTimeout)
	vecs, err := d.emb.Embed(qctx, []string{text})
	cancel()
	switch {
	case err != nil:
	case len(vecs) != 1:
		err = fmt.Errorf("got %d vectors for one query", len(vecs))
	case len(vecs[0]) != snap.dim:
		err = fmt.Errorf("query vector has %d dimensions, tool vectors %d (did the model change?)", len(vecs[0]), snap.dim)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("embedding query: %w", ctx.Err()) // the caller gave up: not an outage
		}
		d.fail(err)
		return nil, fmt.Errorf("embedding query: %w", err)
	}
	d.succeed()
	d.mu.Lock()
	waiting := len(d.pending) > 0
	d.mu.Unlock()
	if waiting {
		d.notify() // the provider is back: catch up on queued tools
	}
	q := unit(vecs[0])
	d.queries.put(text, q)
	return snap.topK(q, k), nil
}

// Hybrid answers a search with both rankings. lexical is the BM25 ranking
// for query, at least Depth() hits long (or limit, if larger): its first
// Depth() hits are fused with the Depth() best dense hits by reciprocal rank
// fusion, and the rest of lexical follows in its own order. The fused part
// never depends on limit, so the answer for one limit is the start of the
// answer for any larger one: what the profiler measures over a whole
// ranking is what retrieve_tools returns at its limit. The result is cut to
// limit (limit <= 0 keeps all).
//
// Whenever dense search cannot answer, the hits are lexical cut to limit
// and the error says why (nil when nothing is embedded yet): a failing
// provider never fails a search, and a caller that must not fall back (the
// profiler) can tell. The returned slice is new; lexical is not modified.
func (d *Dense) Hybrid(ctx context.Context, query string, lexical []index.Hit, limit int) ([]index.Hit, error) {
	clip := func(h []index.Hit) []index.Hit {
		if limit > 0 && len(h) > limit {
			h = h[:limit]
		}
		return slices.Clone(h)
	}
	if d == nil {
		return clip(lexical), nil
	}
	dense, err := d.Search(ctx, query, d.opts.Depth)
	if err != nil || len(dense) == 0 {
		return clip(lexical), err
	}
	head := lexical[:min(len(lexical), d.opts.Depth)]
	fused := FuseWeighted(head, dense, d.opts.RRFK, d.opts.DenseWeight)
	if tail := lexical[len(head):]; len(tail) > 0 && (limit <= 0 || len(fused) < limit) {
		in := make(map[string]bool, len(fused))
		for _, h := range fused {
			in[h.ID] = true
		}
		for _, h := range tail {
			if !in[h.ID] {
				fused = append(fused, h)
			}
		}
	}
	return clip(fused), nil
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

// pendingList returns the queued keys and texts in key order.
func (d *Dense) pendingList() (keys, texts []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keys = make([]string, 0, len(d.pending))
	for k := range d.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	texts = make([]string, len(keys))
	for i, k := range keys {
		texts[i] = d.pending[k]
	}
	return keys, texts
}

// embedPending runs one embedding pass over the queue. Passes never
// overlap, so a tool is not sent twice because the worker and Sync raced.
// force skips the rest after a failure.
func (d *Dense) embedPending(ctx context.Context, force bool) error {
	d.fillMu.Lock()
	defer d.fillMu.Unlock()
	keys, texts := d.pendingList()
	if err := d.fill(ctx, keys, texts, force); err != nil {
		return fmt.Errorf("embedding tools for dense search: %w", err)
	}
	return nil
}

// fill finds vectors for keys: the disk cache first, then the provider in
// batches, storing each batch as it arrives.
func (d *Dense) fill(ctx context.Context, keys, texts []string, force bool) error {
	if d.cache != nil && len(keys) > 0 {
		var hitKeys, restKeys, restTexts []string
		var hitVecs [][]float32
		for i, k := range keys {
			if v, ok := d.cache.load(k); ok {
				hitKeys, hitVecs = append(hitKeys, k), append(hitVecs, v)
			} else {
				restKeys, restTexts = append(restKeys, k), append(restTexts, texts[i])
			}
		}
		d.put(hitKeys, hitVecs)
		keys, texts = restKeys, restTexts
	}
	if len(keys) == 0 {
		return nil
	}
	if !force && !d.available() {
		return fmt.Errorf("%d tools wait for the provider (BM25 still finds them): %w", len(keys), ErrUnavailable)
	}
	var rejected []string
	defer func() { d.logRejected(rejected) }()
	for start := 0; start < len(keys); start += d.opts.BatchSize {
		end := min(start+d.opts.BatchSize, len(keys))
		vecs, err := d.embed(ctx, texts[start:end])
		if refusesInput(err) {
			var r []string
			r, err = d.embedEach(ctx, keys[start:end], texts[start:end])
			rejected = append(rejected, r...)
			if err == nil {
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.fail(err)
			return fmt.Errorf("%d tools wait for the provider (BM25 still finds them): %w", len(keys)-start, err)
		}
		d.succeed()
		d.store(keys[start:end], vecs)
	}
	return nil
}

// embed calls the provider and checks the count.
func (d *Dense) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := d.emb.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("got %d vectors for %d texts", len(vecs), len(texts))
	}
	return vecs, err
}

// store normalizes vectors and keeps them in memory and on disk.
func (d *Dense) store(keys []string, vecs [][]float32) {
	for i := range vecs {
		vecs[i] = unit(vecs[i])
	}
	d.put(keys, vecs)
	if d.cache != nil {
		for i, v := range vecs {
			if err := d.cache.store(keys[i], v); err != nil {
				d.warnCache(err)
			}
		}
	}
}

// ShortTextBytes is the cut a tool text gets when the provider refuses it
// whole: about 250 tokens, inside the window of the smallest common models
// (512 tokens), and still the tool's name, server and the head of its
// description.
const ShortTextBytes = 1000

// embedEach handles a batch the provider refused as bad input (400, 413,
// 422): some text in it is too long for the model, or otherwise not to its
// liking. If a trivial input is refused too, the fault is the provider's
// setup (say, a model that does not take "dimensions"), an outage. Else each
// text goes alone, once more cut to ShortTextBytes if refused; a text
// refused even then is marked rejected and left to BM25 rather than tried
// again forever. It returns the rejected keys and, on an outage, the error.
func (d *Dense) embedEach(ctx context.Context, keys, texts []string) (rejected []string, err error) {
	if _, err := d.embed(ctx, []string{"test"}); err != nil {
		return nil, err
	}
	for i, text := range texts {
		vecs, err := d.embed(ctx, []string{text})
		if refusesInput(err) && len(text) > ShortTextBytes {
			vecs, err = d.embed(ctx, []string{truncate(text, ShortTextBytes)})
		}
		switch {
		case refusesInput(err):
			d.mu.Lock()
			if d.refs[keys[i]] > 0 {
				d.rejected[keys[i]] = true
				delete(d.pending, keys[i])
			}
			d.mu.Unlock()
			rejected = append(rejected, fmt.Sprintf("%q: %v", truncate(text, 60), err))
		case err != nil:
			return rejected, err
		default:
			d.store(keys[i:i+1], vecs)
		}
	}
	d.succeed()
	return rejected, nil
}

// refusesInput reports whether err is the provider refusing the input
// rather than failing.
func refusesInput(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

func (d *Dense) logRejected(rejected []string) {
	if len(rejected) > 0 {
		d.log.Warn("embedding provider refused some tool texts; BM25 alone finds those tools",
			zap.String("embeddings", d.endpoint), zap.String("model", d.fp),
			zap.Int("tools", len(rejected)), zap.String("first", rejected[0]))
	}
}

// put stores vectors for keys some doc still uses.
func (d *Dense) put(keys []string, vecs [][]float32) {
	if len(keys) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, k := range keys {
		if d.refs[k] > 0 {
			d.vecs[k] = vecs[i]
			delete(d.pending, k)
			d.snap = nil
		}
	}
}

// notify wakes the worker without blocking; a wake-up already pending
// covers this one.
func (d *Dense) notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run is the worker: one embedding pass per wake-up, until Close.
func (d *Dense) run() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.wake:
		}
		d.work()
	}
}

func (d *Dense) work() {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("dense indexing panicked", zap.Any("panic", r))
		}
		if d.opts.afterWork != nil {
			d.opts.afterWork()
		}
	}()
	// fill has logged any outage; other errors (a closed Dense, a resting
	// provider) need no word.
	if err := d.embedPending(d.ctx, false); err != nil && d.ctx.Err() == nil {
		d.log.Debug("dense indexing pass stopped", zap.Error(err))
	}
}

// available reports whether the provider may be called now. After a
// failure it rests for RetryInterval; then one caller gets to probe it and
// the rest wait another interval (or for that probe to succeed).
func (d *Dense) available() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.down {
		return true
	}
	now := d.opts.Now()
	if now.Before(d.retryAt) {
		return false
	}
	d.retryAt = now.Add(d.opts.RetryInterval)
	return true
}

// fail starts or extends an outage, logging only its start.
func (d *Dense) fail(err error) {
	d.mu.Lock()
	was := d.down
	d.down = true
	d.retryAt = d.opts.Now().Add(d.opts.RetryInterval)
	d.mu.Unlock()
	fields := []zap.Field{zap.String("embeddings", d.endpoint), zap.String("model", d.fp), zap.Error(err)}
	if !was {
		d.log.Warn("embedding provider failed; tool search uses BM25 alone until it answers again",
			append(fields, zap.Duration("retry_in", d.opts.RetryInterval))...)
		return
	}
	d.log.Debug("embedding provider still failing", fields...)
}

// succeed ends an outage, logging its end.
func (d *Dense) succeed() {
	d.mu.Lock()
	was := d.down
	d.down = false
	d.mu.Unlock()
	if was {
		d.log.Info("embedding provider answers again; dense search resumed",
			zap.String("embeddings", d.endpoint), zap.String("model", d.fp))
	}
}

func (d *Dense) warnCache(err error) {
	d.mu.Lock()
	warned := d.warned
	d.warned = true
	d.mu.Unlock()
	if !warned {
		d.log.Warn("cannot write the embeddings cache; vectors will be fetched again after a restart", zap.Error(err))
	}
}

// snapshot returns the current search view, building it after a change.
func (d *Dense) snapshot() *snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.snap != nil {
		return d.snap
	}
	// All vectors share the model's length; should a provider ever change
	// it under us, search the most common length (the rest re-embed once
	// their texts change or the cache is cleared).
	count := map[int]int{}
	for _, v := range d.vecs {
		count[len(v)]++
	}
	s := &snapshot{}
	best := 0
	for dim, n := range count {
		if n > best || (n == best && dim < s.dim) {
			s.dim, best = dim, n
		}
	}
	for _, docs := range d.servers {
		for _, dc := range docs {
			if v := d.vecs[dc.key]; len(v) == s.dim && s.dim > 0 {
				s.hits = append(s.hits, index.Hit{ID: dc.id, Server: dc.server, Name: dc.name})
				s.vecs = append(s.vecs, v)
			}
		}
	}
	idx := make([]int, len(s.hits))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.hits[idx[a]].ID < s.hits[idx[b]].ID })
	hits, vecs := make([]index.Hit, len(idx)), make([][]float32, len(idx))
	for i, j := range idx {
		hits[i], vecs[i] = s.hits[j], s.vecs[j]
	}
	s.hits, s.vecs = hits, vecs
	d.snap = s
	return s
}

// topK returns the k best hits for unit vector q: a bounded min-heap over
// all rows (the rows are in ID order, so a lower row wins a tie), then
// sorted by score descending, ties by ID.
func (s *snapshot) topK(q []float32, k int) []index.Hit {
	k = min(k, len(s.vecs))
	type cand struct {
		score float32
		row   int
	}
	// worse reports whether a ranks below b.
	worse := func(a, b cand) bool { return a.score < b.score || (a.score == b.score && a.row > b.row) }
	heap := make([]cand, 0, k)
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(heap) && worse(heap[l], heap[m]) {
				m = l
			}
			if r := l + 1; r < len(heap) && worse(heap[r], heap[m]) {
				m = r
			}
			if m == i {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for row, v := range s.vecs {
		c := cand{vec.Dot(q, v), row}
		if len(heap) < k {
			heap = append(heap, c)
			for i := len(heap) - 1; i > 0; {
				p := (i - 1) / 2
				if !worse(heap[i], heap[p]) {
					break
				}
				heap[i], heap[p] = heap[p], heap[i]
				i = p
			}
			continue
		}
		if worse(heap[0], c) {
			heap[0] = c
			down(0)
		}
	}
	slices.SortFunc(heap, func(a, b cand) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	out := make([]index.Hit, len(heap))
	for i, c := range heap {
		out[i] = s.hits[c.row]
		out[i].Score = float64(c.score)
	}
	return out
}

// unit returns v scaled to length 1 (a new slice); a zero vector stays
// zero and so scores 0 against everything.
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// lru is a small least-recently-used map from query text to unit vector,
// safe for concurrent use. A nil *lru holds nothing.
type lru struct {
	mu    sync.Mutex
	size  int
	items map[string]*list.Element
	order *list.List // front = most recent; values are *lruEntry
}

type lruEntry struct {
	key string
	vec []float32
}

func newLRU(size int) *lru {
	return &lru{size: size, items: map[string]*list.Element{}, order: list.New()}
}

func (c *lru) get(key string) ([]float32, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).vec, true
}

func (c *lru) put(key string, vec []float32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		e.Value.(*lruEntry).vec = vec
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, vec: vec})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*lruEntry).key)
	}
}
