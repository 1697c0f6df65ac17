package embed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/vec"
)

// Benchmarks, run with
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/embed
//
// TopK compares the bounded heap Search uses with a baseline measured in
// the same run, "sort-all": score every tool, sort all scores, keep k. Both
// do the same n dot products; the ratio is what selection saves over
// sorting. Vectors are random unit vectors (a fixed seed): the cost does not
// depend on their meaning. Fuse compares fusing two 50-hit rankings with
// "sort-only", sorting a copy of the 100 hits by score, the least any merge
// of the two lists must do.

func randomSnapshot(n, dim int) (*snapshot, []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return unit(v)
	}
	s := &snapshot{dim: dim}
	for i := range n {
		s.hits = append(s.hits, index.Hit{ID: fmt.Sprintf("s%04d:tool%05d", i%1330, i)})
		s.vecs = append(s.vecs, vec())
	}
	return s, vec()
}

func BenchmarkTopK(b *testing.B) {
	for _, n := range []int{527, 10000} {
		for _, dim := range []int{100, 768} {
			s, q := randomSnapshot(n, dim)
			name := fmt.Sprintf("tools=%d/dim=%d", n, dim)
			b.Run(name+"/heap", func(b *testing.B) {
				for b.Loop() {
					s.topK(q, DefaultDepth)
				}
			})
			b.Run(name+"/sort-all", func(b *testing.B) {
				for b.Loop() {
					sortAll(s, q, DefaultDepth)
				}
			})
		}
	}
}

// sortAll is the baseline: every score, a full sort, the first k.
func sortAll(s *snapshot, q []float32, k int) []index.Hit {
	all := make([]index.Hit, len(s.vecs))
	for i, v := range s.vecs {
		all[i] = s.hits[i]
		all[i].Score = float64(vec.Dot(q, v))
	}
	slices.SortFunc(all, func(a, b index.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return all[:min(k, len(all))]
}

func BenchmarkFuse(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	pool := make([]index.Hit, 100)
	for i := range pool {
		pool[i] = index.Hit{ID: fmt.Sprintf("s:t%03d", i), Server: "s", Name: fmt.Sprintf("t%03d", i), Score: r.Float64()}
	}
	// Two 50-hit rankings drawn from 100 tools: about half shared.
	lexical := slices.Clone(pool[:50])
	dense := slices.Clone(pool[25:75])
	r.Shuffle(len(dense), func(i, j int) { dense[i], dense[j] = dense[j], dense[i] })
	b.Run("rrf-50+50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Fuse(lexical, dense, 60)
		}
	})
	b.Run("sort-only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			all := append(slices.Clone(lexical), dense...)
			slices.SortFunc(all, func(a, b index.Hit) int { return cmp.Compare(b.Score, a.Score) })
		}
	})
}

func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{527, 10000} {
		d := New(fixedEmbedder{}, Options{})
		b.Cleanup(func() { d.Close() })
		s, _ := randomSnapshot(n, 768)
		for i, h := range s.hits {
			key := fmt.Sprint(i)
			d.servers[h.ID] = []doc{{id: h.ID, key: key}}
			d.refs[key] = 1
			d.vecs[key] = s.vecs[i]
		}
		b.Run(fmt.Sprintf("tools=%d/dim=768/rebuild", n), func(b *testing.B) {
			for b.Loop() {
				d.mu.Lock()
				d.snap = nil
				d.mu.Unlock()
				d.snapshot()
			}
		})
	}
}

// fixedEmbedder satisfies New for a benchmark that never embeds.
type fixedEmbedder struct{}

func (fixedEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("not used")
}

func (fixedEmbedder) Fingerprint() string { return "fixed" }
