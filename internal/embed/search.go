package embed

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/vec"
)

// snapshot is an immutable view for searching: hits sorted by ID, with
// their vectors (shared with Dense.vecs, never written after storing).
type snapshot struct {
	dim  int
	hits []index.Hit
	vecs [][]float32
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
