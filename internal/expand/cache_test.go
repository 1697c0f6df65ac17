package expand

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/vec"
)

// referenceExpand is Expand as it was before the neighbor cache: a full
// pass over every index term for every call. TestExpandMatchesReference
// holds the cached Expand to its results, bit for bit.
func referenceExpand(e *Expander, terms []string, inIndex func(term string) bool) []WeightedTerm {
	if len(e.terms) == 0 {
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
			s := vec.Dot(row, qs[k*e.dims:(k+1)*e.dims])
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

// TestExpandMatchesReference runs thousands of queries through the cached
// Expand, cold and then warm, and through referenceExpand, over the
// LiveMCPTool vocabulary and the 10,000-tool one, with the default options
// and others that change which words expand and how many neighbors they
// keep, with the Expander's own vocabulary and with live views that drop
// terms (so cached candidates are filtered out, down to the fallback
// pass). Every result must be identical, weights included.
func TestExpandMatchesReference(t *testing.T) {
	v := vectors(t)
	// Query words: every 313th term of the file (rare and frequent, in the
	// index or not), in queries of one to four words, plus the LiveMCPTool
	// queries' own words.
	var words []string
	for i := 0; i < v.Len(); i += 313 {
		words = append(words, v.Term(i))
	}
	var queries [][]string
	for i, n := 0, 1; i < len(words); i, n = i+n, n%4+1 {
		queries = append(queries, words[i:min(i+n, len(words))])
	}
	a, err := wordAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range loadQueries(t, "livemcptool.queries.json") {
		var ts []string
		for _, tok := range a.Analyze([]byte(q.Query)) {
			ts = append(ts, string(tok.Term))
		}
		queries = append(queries, ts)
	}

	sizes := []int{527, 10000}
	if raceEnabled {
		// A sample: every third query, the smaller vocabulary, two option
		// sets. TestExpandCacheConcurrent is the one about races.
		var sample [][]string
		for i := 0; i < len(queries); i += 3 {
			sample = append(sample, queries[i])
		}
		queries, sizes = sample, sizes[:1]
	}
	for _, tools := range sizes {
		vocab := benchVocab(t, v, tools)
		// Queries made of index terms and their nearest words, so that
		// query words are each other's neighbors and get filtered out.
		qs := slices.Clone(queries)
		for i := 0; i+3 <= len(vocab); i += 307 {
			qs = append(qs, vocab[i:i+3])
		}
		live := map[string]func(string) bool{
			"own vocabulary": nil,
			"every 3rd term dropped": func(s string) bool {
				i, ok := slices.BinarySearch(vocab, s)
				return ok && i%3 != 0
			},
			"most terms dropped": func(s string) bool {
				i, ok := slices.BinarySearch(vocab, s)
				return ok && i%10 == 0
			},
		}
		variants := []Options{{}}
		if raceEnabled {
			variants = append(variants, Options{Context: 0.3})
		} else if tools == 527 { // the larger vocabulary only with the defaults: the reference is slow
			variants = append(variants,
				Options{Neighbors: 1},
				Options{Neighbors: 5, MinSimilarity: 0.3},
				Options{KnownWeight: 0.4, MinRank: -1},
				Options{Context: 0.3})
		}
		for _, opts := range variants {
			for name, inIndex := range live {
				if tools != 527 && name != "every 3rd term dropped" {
					continue // the reference is slow at this size
				}
				t.Run(fmt.Sprintf("tools=%d/%+v/%s", tools, opts, name), func(t *testing.T) {
					e := New(v, vocab, opts)
					expanded := 0
					wants := make([][]WeightedTerm, len(qs))
					for i, q := range qs {
						wants[i] = referenceExpand(e, q, inIndex)
					}
					for pass := range 2 { // cold cache, then warm
						for i, q := range qs {
							got, want := e.Expand(q, inIndex), wants[i]
							if !gocmp.Equal(got, want) {
								t.Fatalf("pass %d: Expand(%q) = %v, want %v", pass, q, got, want)
							}
							if len(got) > 0 {
								expanded++
							}
						}
					}
					if expanded < len(qs)/10 {
						t.Errorf("only %d of %d queries expanded: the comparison proves little", expanded, 2*len(qs))
					}
				})
			}
		}
	}
}

// TestExpandCacheConcurrent runs the same queries from several goroutines on a
// fresh Expander, so cache fills race with reads (run with -race).
func TestExpandCacheConcurrent(t *testing.T) {
	v := vectors(t)
	vocab := benchVocab(t, v, 527)
	e := New(v, vocab, Options{})
	ref := New(v, vocab, Options{})
	var queries [][]string
	for i := 0; i < v.Len(); i += 613 {
		queries = append(queries, []string{v.Term(i)})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range queries {
				q := queries[(i+g*len(queries)/4)%len(queries)]
				if got, want := e.Expand(q, nil), referenceExpand(ref, q, nil); !gocmp.Equal(got, want) {
					errs <- fmt.Sprintf("Expand(%q) = %v, want %v", q, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// TestExpandCacheBounded fills an Expander's cache past its bound (lowered
// for the test) and checks the results stay right after evictions.
func TestExpandCacheBounded(t *testing.T) {
	v := vectors(t)
	vocab := benchVocab(t, v, 527)
	e := New(v, vocab, Options{})
	e.cacheMax = 20
	for i := 0; i < v.Len() && i < 4000; i += 37 {
		q := []string{v.Term(i)}
		if got, want := e.Expand(q, nil), referenceExpand(e, q, nil); !gocmp.Equal(got, want) {
			t.Fatalf("Expand(%q) = %v, want %v", q, got, want)
		}
	}
	e.cacheMu.RLock()
	n := len(e.cache)
	e.cacheMu.RUnlock()
	if n > e.cacheMax || n == 0 {
		t.Errorf("cache holds %d words, want 1 to %d", n, e.cacheMax)
	}
}
