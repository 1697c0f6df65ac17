package embed

import (
	"cmp"
	"slices"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

// Fuse merges a BM25 ranking and a dense ranking by reciprocal rank fusion
// with equal weights; see FuseWeighted.
func Fuse(lexical, dense []index.Hit, k int) []index.Hit {
	return FuseWeighted(lexical, dense, k, 1)
}

// FuseWeighted merges two rankings by reciprocal rank fusion: a tool at
// 1-based rank r in the lexical list earns 1/(k+r), at rank r in the dense
// list denseWeight/(k+r), and tools are ordered by the sum, ties by ID.
// Only ranks count, never the lists' own scores, which live on different
// scales (BM25 is unbounded, cosine is -1..1). k <= 0 means
// config.DefaultRRFK; denseWeight < 0 counts as 0. A tool listed twice in
// one list counts once, at its best rank. Each returned hit is a copy of
// the tool's first appearance (lexical first, so BM25's match details such
// as its query coverage survive) with Score replaced by the fused score.
// The result holds every tool of either list; the inputs are not modified.
func FuseWeighted(lexical, dense []index.Hit, k int, denseWeight float64) []index.Hit {
	if k <= 0 {
		k = config.DefaultRRFK
	}
	denseWeight = max(denseWeight, 0)
	out := make([]index.Hit, 0, len(lexical)+len(dense))
	at := make(map[string]int, len(lexical)+len(dense))
	for _, list := range []struct {
		hits   []index.Hit
		weight float64
	}{{lexical, 1}, {dense, denseWeight}} {
		seen := make(map[string]bool, len(list.hits))
		for r, h := range list.hits {
			if seen[h.ID] {
				continue
			}
			seen[h.ID] = true
			i, ok := at[h.ID]
			if !ok {
				i = len(out)
				at[h.ID] = i
				out = append(out, h)
				out[i].Score = 0
			}
			out[i].Score += list.weight / float64(k+r+1)
		}
	}
	slices.SortFunc(out, func(a, b index.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}
