package expand

import (
	"slices"
	"sync"

	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/vec"
)

// Related finds document-side expansions: for a tool's terms, their nearest
// words among the common words of English in the vectors file (not only
// the words the index holds), so that a tool about a "directory" can be
// found by a query about a "folder". It is safe for concurrent use and
// remembers each term's neighbors, so indexing the same tools again (or
// another index over the same words) costs lookups.
type Related struct {
	vecs   *Vectors
	opts   RelatedOptions
	dims   int
	terms  []string  // candidate words: rank in [MinRank, MaxRank), ascending
	matrix []float32 // their unit vectors, row-major

	mu    sync.Mutex
	cache map[string][]cand // by term: up to relatedPool neighbors at least relatedFloor
}

// RelatedOptions configures NewRelated. Zero fields take the defaults.
type RelatedOptions struct {
	// MinRank skips the MinRank most frequent words of English, both as
	// terms to expand and as expansions (they sit near everything). Zero
	// means DefaultMinRank.
	MinRank int
	// MaxRank bounds the candidate expansions to the MaxRank most frequent
	// words: rarer ones are mostly names and misspellings, and every
	// candidate costs a dot product per term. Zero means
	// DefaultRelatedMaxRank.
	MaxRank int
}

// DefaultRelatedMaxRank is RelatedOptions.MaxRank's default.
const DefaultRelatedMaxRank = 30000

const (
	// relatedPool and relatedFloor bound what the cache keeps per term:
	// enough for every setting Func is called with.
	relatedPool  = 10
	relatedFloor = 0.4
)

// NewRelated gathers the candidate words' vectors (a few MB at the
// default MaxRank).
func NewRelated(v *Vectors, opts RelatedOptions) *Related {
	if opts.MinRank == 0 {
		opts.MinRank = DefaultMinRank
	}
	if opts.MaxRank <= 0 {
		opts.MaxRank = DefaultRelatedMaxRank
	}
	r := &Related{vecs: v, opts: opts, dims: v.Dims(), cache: map[string][]cand{}}
	var rows []int
	for i := range v.Len() {
		if rank := int(v.ranks[i]); rank >= opts.MinRank && rank < opts.MaxRank {
			r.terms = append(r.terms, v.Term(i))
			rows = append(rows, i)
		}
	}
	r.matrix = make([]float32, len(rows)*r.dims)
	for k, i := range rows {
		v.row(i, r.matrix[k*r.dims:(k+1)*r.dims])
	}
	return r
}

// Func returns the index.RelatedFunc giving, for each term with a vector
// (and not among the MinRank most frequent words), its up to neighbors
// nearest candidate words at least minSim from it (neighbors at most 10,
// minSim at least 0.4: what the cache keeps). The result is sorted and
// holds no input term.
func (r *Related) Func(neighbors int, minSim float64) index.RelatedFunc {
	neighbors = min(neighbors, relatedPool)
	minSim = max(minSim, relatedFloor)
	return func(terms []string) []string {
		lists := r.neighbors(terms)
		var out []string
		for _, l := range lists {
			n := 0
			for _, c := range l {
				if n == neighbors || float64(c.sim) < minSim {
					break
				}
				t := r.terms[c.i]
				if slices.Contains(terms, t) {
					continue
				}
				n++
				out = append(out, t)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
}

// neighbors returns each expandable term's cached candidates, scanning the
// candidate words once for the terms not cached yet.
func (r *Related) neighbors(terms []string) [][]cand {
	var missing []string
	var rows []int
	lists := make([][]cand, 0, len(terms))
	r.mu.Lock()
	for _, t := range terms {
		if l, ok := r.cache[t]; ok {
			lists = append(lists, l)
			continue
		}
		i := r.vecs.index(t)
		if i < 0 || int(r.vecs.ranks[i]) < r.opts.MinRank {
			continue
		}
		if !slices.Contains(missing, t) {
			missing = append(missing, t)
			rows = append(rows, i)
		}
	}
	r.mu.Unlock()
	if len(missing) == 0 {
		return lists
	}
	qs := make([]float32, len(missing)*r.dims)
	for k, i := range rows {
		r.vecs.row(i, qs[k*r.dims:(k+1)*r.dims])
	}
	tops := r.scan(qs)
	r.mu.Lock()
	for k, t := range missing {
		r.cache[t] = tops[k]
	}
	r.mu.Unlock()
	return append(lists, tops...)
}

// scan returns, for each vector of qs, its relatedPool most similar
// candidate words at least relatedFloor from it, by similarity then word.
func (r *Related) scan(qs []float32) [][]cand {
	n := len(qs) / r.dims
	tops := make([][]cand, n)
	for i := range r.terms {
		row := r.matrix[i*r.dims : (i+1)*r.dims]
		for k := range n {
			s := vec.Dot(row, qs[k*r.dims:(k+1)*r.dims])
			top := tops[k]
			if s < relatedFloor || len(top) == relatedPool && s <= top[len(top)-1].sim {
				continue
			}
			pos := len(top)
			for pos > 0 && top[pos-1].sim < s {
				pos--
			}
			top = slices.Insert(top, pos, cand{i, s})
			if len(top) > relatedPool {
				top = top[:relatedPool]
			}
			tops[k] = top
		}
	}
	return tops
}
