package expand

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/mcproxy/mcproxy/internal/vec"
)

// Options configures an Expander. Zero fields take the defaults documented
// on each, chosen on the "tune" halves of bench/queries (never the
// held-back halves) with this package's test harness: TestShapeSweep
// (run with -expand.sweep) for the grid, TestExpansionEffect for the
// result on the production index.
type Options struct {
	// Neighbors is how many index terms at most expand one query term.
	// Zero means DefaultNeighbors.
	Neighbors int
	// MinSimilarity is the cosine similarity an index term needs to the
	// query term to expand it. Zero means DefaultMinSimilarity.
	MinSimilarity float64
	// UnknownWeight scales the expansions of a query term the index does
	// not hold: its literal clause can match nothing, so its neighbors are
	// its only voice. An expansion weighs UnknownWeight × similarity,
	// capped at 0.95. Zero means DefaultUnknownWeight; a negative value
	// expands nothing.
	UnknownWeight float64
	// KnownWeight scales the expansions of a query term the index holds.
	// Zero, the default, expands no such term: it already matches
	// literally, and every weight tried lost ranking quality on the tune
	// halves (related words of a word the tools use mostly pull in tools
	// about something else).
	KnownWeight float64
	// MinRank skips words among the MinRank most frequent of English, both
	// as query words to expand and as expansions: such words ("even",
	// "like", "five") sit near everything in embedding space and match
	// many tools. Zero means DefaultMinRank; a negative value disables it.
	MinRank int
	// Context, between 0 and 1, blends the whole query (the mean of its
	// words' vectors) into each word before its neighbors are sought:
	// (1-Context)·word + Context·query, favoring the sense the rest of the
	// query is about. Zero, the default, uses the word alone: blending did
	// not help on the tune halves.
	Context float64
}

// maxWeight caps an expansion's weight: a related word never counts as
// much as the query's own words, even when its vector is identical.
const maxWeight = 0.95

// Defaults for Options. One neighbour per word: with two, the looser
// second one cost corpus_v2's tune MRR once parameter descriptions left the
// params field (docs/retrieval.md), and a higher similarity floor instead
// lost real bridges (inbox → email, TestRealNeighbors).
const (
	DefaultNeighbors     = 1
	DefaultMinSimilarity = 0.5
	DefaultUnknownWeight = 1.0
	DefaultMinRank       = 200
)

func (o Options) withDefaults() Options {
	if o.Neighbors <= 0 {
		o.Neighbors = DefaultNeighbors
	}
	if o.MinSimilarity == 0 {
		o.MinSimilarity = DefaultMinSimilarity
	}
	if o.UnknownWeight == 0 {
		o.UnknownWeight = DefaultUnknownWeight
	}
	if o.MinRank == 0 {
		o.MinRank = DefaultMinRank
	}
	o.Context = min(max(o.Context, 0), 1)

	return o
}

// Expander expands analyzed query terms into related terms of one index
// vocabulary. It is immutable and safe for concurrent use; build a new one
// when the vocabulary changes.
//
// A query word's nearest index terms depend only on the word and on the
// vocabulary, so the Expander remembers them (up to cacheSize words): a
// word seen before costs a map lookup instead of a pass over every index
// term. The cache changes no result: it holds each word's candidates in
// the order a full pass ranks them, with a few to spare for those a query
// filters out, and Expand falls back to the full pass when too many are.
type Expander struct {
	vecs   *Vectors
	opts   Options
	dims   int
	terms  []string  // index terms that have a vector, ascending
	matrix []float32 // their unit vectors, row-major, len(terms)*dims
	vocab  []string  // the whole vocabulary, ascending, distinct

	cacheMu  sync.RWMutex
	cache    map[string]neighbors // by query word; only when opts.Context == 0
	cacheMax int                  // cacheSize, lowered by tests
}

// neighbors are a query word's best index terms (rows) by similarity, at
// least MinSimilarity, before any query's filtering: the whole list when
// complete, else its first Neighbors+spareNeighbors.
type neighbors struct {
	cands    []cand
	complete bool
}

const (
	// cacheSize bounds the words an Expander remembers (each entry is a
	// few dozen bytes); past it, an arbitrary entry makes room.
	cacheSize = 8192
	// spareNeighbors is how many candidates beyond Neighbors a cache
	// entry keeps for the query's own words (never their own expansions)
	// and for terms the index dropped since the Expander was built.
	spareNeighbors = 6
)

// New returns an Expander over vocab, the distinct analyzed terms the index
// holds (in any order, duplicates allowed; vocab is not modified). Index
// terms without a vector (identifiers, numbers, non-English words) take
// part only as known words: they are never offered as expansions.
func New(v *Vectors, vocab []string, opts Options) *Expander {
	e := &Expander{vecs: v, opts: opts.withDefaults(), dims: v.Dims()}
	if e.opts.Context == 0 {
		e.cache = make(map[string]neighbors)
		e.cacheMax = cacheSize
	}
	sorted := slices.Clone(vocab)
	if !slices.IsSorted(sorted) { // the index hands it over sorted
		slices.Sort(sorted)
	}
	sorted = slices.Compact(sorted)
	e.vocab = sorted
	rows := make([]int, 0, len(sorted))
	add := func(i int, t string) {
		if int(v.ranks[i]) >= e.opts.MinRank {
			e.terms = append(e.terms, t)
			rows = append(rows, i)
		}
	}
	if len(sorted)*20 < v.Len() {
		// A small vocabulary: look each term up.
		for _, t := range sorted {
			if i := v.index(t); i >= 0 {
				add(i, t)
			}
		}
	}
	// Both lists are sorted: one merge finds the terms with vectors.
	for i, j := 0, 0; len(sorted)*20 >= v.Len() && i < v.Len() && j < len(sorted); {
		switch ft := string(v.term(i)); {
		case ft < sorted[j]:
			i++
		case ft > sorted[j]:
			j++
		default:
			add(i, sorted[j])
			i++
			j++
		}
	}
	e.matrix = make([]float32, len(rows)*e.dims)
	for k, i := range rows {
		v.row(i, e.matrix[k*e.dims:(k+1)*e.dims])
	}
	return e
}

// Len returns the number of index terms that can be offered as expansions.
func (e *Expander) Len() int { return len(e.terms) }

// Expand returns index terms related to the analyzed query terms, each
// weighted below 1, the weight of a literal term: up to Neighbors terms per
// query term, at least MinSimilarity from it, never a query term itself.
// inIndex, when not nil, is the index's live view of its vocabulary: it
// decides which query terms the index holds and filters out expansions the
// index no longer has (an Expander built before the latest update). nil
// means the vocabulary given to New. A term reached from several query
// terms keeps its highest weight. The result is ordered by weight, then
// term, so the same input always gives the same output.
func (e *Expander) Expand(terms []string, inIndex func(term string) bool) []WeightedTerm {
	if e == nil || len(e.terms) == 0 {
		return nil
	}
	if inIndex == nil {
		inIndex = func(t string) bool {
			_, ok := slices.BinarySearch(e.vocab, t)
			return ok
		}
	}
	// keep says whether an index term may expand this query.
	keep := func(row int) bool {
		t := e.terms[row]
		return !slices.Contains(terms, t) && inIndex(t)
	}
	// The query words to expand: with a vector, not among the most
	// frequent words, and a weight for their kind (known or not).
	words := make([]word, 0, len(terms))
	for _, t := range terms {
		i := e.vecs.index(t)
		if i < 0 {
			continue
		}
		base := e.opts.UnknownWeight
		if inIndex(t) {
			base = e.opts.KnownWeight
		}
		if base <= 0 || int(e.vecs.ranks[i]) < e.opts.MinRank {
			continue
		}
		words = append(words, word{term: t, row: i, base: base})
	}
	if len(words) == 0 {
		return nil
	}
	if e.cache == nil {
		e.scanInContext(terms, words, keep)
	} else {
		e.fromCache(words, keep)
	}

	out := make([]WeightedTerm, 0, len(words)*e.opts.Neighbors)
	for _, w := range words {
		for _, c := range w.top {
			wt := min(w.base*float64(c.sim), maxWeight)
			term := e.terms[c.i]
			k := slices.IndexFunc(out, func(x WeightedTerm) bool { return x.Term == term })
			switch {
			case k < 0:
				out = append(out, WeightedTerm{Term: term, Weight: wt, From: w.term})
			case wt > out[k].Weight:
				out[k] = WeightedTerm{Term: term, Weight: wt, From: w.term}
			}
		}
	}
	slices.SortFunc(out, func(a, b WeightedTerm) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return cmp.Compare(a.Term, b.Term)
	})
	return out
}

// word is a query word to expand: its row in the vectors file, the weight
// its expansions' similarities are scaled by, and its chosen neighbors.
type word struct {
	term string
	row  int
	base float64
	top  []cand
}

// fromCache sets each word's neighbors from the cache, scanning the index
// terms once for the words not in it yet.
func (e *Expander) fromCache(words []word, keep func(row int) bool) {
	lists := make([]neighbors, len(words))
	var missing []int // indexes into words
	e.cacheMu.RLock()
	for k, w := range words {
		nb, ok := e.cache[w.term]
		if !ok {
			missing = append(missing, k)
		}
		lists[k] = nb
	}
	e.cacheMu.RUnlock()
	if len(missing) > 0 {
		qs := make([]float32, len(missing)*e.dims)
		for m, k := range missing {
			e.vecs.row(words[k].row, qs[m*e.dims:(m+1)*e.dims])
		}
		limit := e.opts.Neighbors + spareNeighbors
		tops := e.scan(qs, limit, nil)
		e.cacheMu.Lock()
		for m, k := range missing {
			nb := neighbors{cands: tops[m], complete: len(tops[m]) < limit}
			lists[k] = nb
			if len(e.cache) >= e.cacheMax {
				for old := range e.cache {
					delete(e.cache, old)
					break
				}
			}
			e.cache[words[k].term] = nb
		}
		e.cacheMu.Unlock()
	}
	for k := range words {
		top := make([]cand, 0, e.opts.Neighbors)
		for _, c := range lists[k].cands {
			if len(top) == e.opts.Neighbors {
				break
			}
			if keep(c.i) {
				top = append(top, c)
			}
		}
		if len(top) < e.opts.Neighbors && !lists[k].complete {
			// The query filtered out more than the spare candidates: rank
			// every index term again, filtered this time.
			q := make([]float32, e.dims)
			e.vecs.row(words[k].row, q)
			top = e.scan(q, e.opts.Neighbors, keep)[0]
		}
		words[k].top = top
	}
}

// scanInContext sets each word's neighbors with Options.Context: the
// word's vector blended with the query's mean, which no cache can hold.
func (e *Expander) scanInContext(terms []string, words []word, keep func(row int) bool) {
	// The mean of every query word with a vector, expanded or not.
	ctx := make([]float32, e.dims)
	vec := make([]float32, e.dims)
	for _, t := range terms {
		i := e.vecs.index(t)
		if i < 0 {
			continue
		}
		e.vecs.row(i, vec)
		for j, x := range vec {
			ctx[j] += x
		}
	}
	normalize(ctx)
	alpha := float32(e.opts.Context)
	qs := make([]float32, len(words)*e.dims)
	for k, w := range words {
		e.vecs.row(w.row, vec)
		q := qs[k*e.dims : (k+1)*e.dims]
		for j := range q {
			q[j] = (1-alpha)*vec[j] + alpha*ctx[j]
		}
	}
	tops := e.scan(qs, e.opts.Neighbors, keep)
	for k := range words {
		words[k].top = tops[k]
	}
}

// scan ranks the index terms against each query vector in qs (row-major,
// dims each) and returns, per vector, the best limit terms at least
// MinSimilarity from it that keep accepts (all when keep is nil), by
// similarity, then by term. One pass over the index terms serves every
// vector: the matrix is larger than the CPU caches at 10,000 tools, the
// query words are few.
func (e *Expander) scan(qs []float32, limit int, keep func(row int) bool) [][]cand {
	n := len(qs) / e.dims
	minSim := float32(e.opts.MinSimilarity)
	tops := make([][]cand, n)
	for k := range tops {
		tops[k] = make([]cand, 0, limit+1)
	}
	for i := range e.terms {
		row := e.matrix[i*e.dims : (i+1)*e.dims]
		for k := range n {
			s := vec.Dot(row, qs[k*e.dims:(k+1)*e.dims])
			if s < minSim {
				continue
			}
			top := tops[k]
			if len(top) == limit && s <= top[len(top)-1].sim {
				continue
			}
			if keep != nil && !keep(i) {
				continue
			}
			// Rows are in term order, so an earlier row wins a tie.
			pos := len(top)
			for pos > 0 && top[pos-1].sim < s {
				pos--
			}
			top = slices.Insert(top, pos, cand{i, s})
			if len(top) > limit {
				top = top[:limit]
			}
			tops[k] = top
		}
	}
	return tops
}

// cand is an index term (row) and its similarity to a query word.
type cand struct {
	i   int
	sim float32
}

// normalize scales v to unit length (a zero vector stays zero).
func normalize(v []float32) {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(n))
	for i := range v {
		v[i] *= inv
	}
}
