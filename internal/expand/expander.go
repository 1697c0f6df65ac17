package expand

import (
	"cmp"
	"math"
	"slices"
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

// Defaults for Options.
const (
	DefaultNeighbors     = 2
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
type Expander struct {
	vecs   *Vectors
	opts   Options
	dims   int
	terms  []string  // index terms that have a vector, ascending
	matrix []float32 // their unit vectors, row-major, len(terms)*dims
	vocab  []string  // the whole vocabulary, ascending, distinct
}

// New returns an Expander over vocab, the distinct analyzed terms the index
// holds (in any order, duplicates allowed; vocab is not modified). Index
// terms without a vector (identifiers, numbers, non-English words) take
// part only as known words: they are never offered as expansions.
func New(v *Vectors, vocab []string, opts Options) *Expander {
	e := &Expander{vecs: v, opts: opts.withDefaults(), dims: v.Dims()}
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
	inQuery := make(map[string]bool, len(terms))
	for _, t := range terms {
		inQuery[t] = true
	}
	// The query words with vectors, and their mean (the context).
	type word struct {
		term string
		base float64
		vec  []float32
	}
	var words []word
	ctx := make([]float32, e.dims)
	for _, t := range terms {
		i := e.vecs.index(t)
		if i < 0 {
			continue
		}
		vec := make([]float32, e.dims)
		e.vecs.row(i, vec)
		for j, x := range vec {
			ctx[j] += x
		}
		base := e.opts.UnknownWeight
		if inIndex(t) {
			base = e.opts.KnownWeight
		}
		if base <= 0 || int(e.vecs.ranks[i]) < e.opts.MinRank {
			continue
		}
		words = append(words, word{t, base, vec})
	}
	if len(words) == 0 {
		return nil
	}
	alpha := float32(e.opts.Context)
	if alpha > 0 {
		normalize(ctx)
	}
	// One pass over the index terms scores every query word: the matrix
	// is larger than the CPU caches at 10,000 tools, the words are few.
	qs := make([]float32, len(words)*e.dims)
	for k, w := range words {
		q := qs[k*e.dims : (k+1)*e.dims]
		for j := range q {
			q[j] = (1-alpha)*w.vec[j] + alpha*ctx[j]
		}
	}
	minSim := float32(e.opts.MinSimilarity)
	tops := make([][]cand, len(words))
	for i, term := range e.terms {
		row := e.matrix[i*e.dims : (i+1)*e.dims]
		for k := range words {
			s := dot32(row, qs[k*e.dims:(k+1)*e.dims])
			if s < minSim {
				continue
			}
			top := tops[k]
			if len(top) == e.opts.Neighbors && s <= top[len(top)-1].sim {
				continue
			}
			if inQuery[term] || !inIndex(term) {
				continue
			}
			// Keep the best Neighbors by similarity, then by term (rows are
			// in term order, so an earlier row wins a tie).
			pos := len(top)
			for pos > 0 && top[pos-1].sim < s {
				pos--
			}
			top = slices.Insert(top, pos, cand{i, s})
			if len(top) > e.opts.Neighbors {
				top = top[:e.opts.Neighbors]
			}
			tops[k] = top
		}
	}
	best := map[string]WeightedTerm{}
	for k, w := range words {
		for _, c := range tops[k] {
			wt := min(w.base*float64(c.sim), maxWeight)
			term := e.terms[c.i]
			if old, ok := best[term]; !ok || wt > old.Weight {
				best[term] = WeightedTerm{Term: term, Weight: wt, From: w.term}
			}
		}
	}
	out := make([]WeightedTerm, 0, len(best))
	for _, wt := range best {
		out = append(out, wt)
	}
	slices.SortFunc(out, func(a, b WeightedTerm) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return cmp.Compare(a.Term, b.Term)
	})
	return out
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

// dot32 is the dot product of two vectors of equal length, with four
// running sums so the additions do not wait on each other (about twice as
// fast as one sum); the order is fixed, so results are deterministic.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
