package index

import (
	"context"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// The quality tests guard retrieval against regressions on the frozen
// corpora with the "tune" halves of the profiler's query sets; the floors sit
// a little under what the current plan measures (see defaultPlan), so a
// change that loses ground fails here, and one that gains should raise them.
// The held-back halves are only logged, never asserted or tuned on.

type metrics struct {
	hit5, mrr, recall5 float64
	n                  int
}

func evaluate(t testing.TB, ix *Index, qs querySet, split string) metrics {
	var m metrics
	for _, q := range qs.Queries {
		if q.Split != split {
			continue
		}
		hits, err := ix.Search(context.Background(), q.Query, 10)
		if err != nil {
			t.Fatal(err)
		}
		rank := map[string]int{}
		for i, h := range hits {
			rank[h.ID] = i + 1
		}
		best := 0
		found, rel := 0, 0
		for _, l := range q.Labels {
			r, ok := rank[l.ToolID]
			if l.Relevance >= 1 {
				rel++
				if ok && r <= 5 {
					found++
				}
			}
			if l.Relevance == 2 && ok && (best == 0 || r < best) {
				best = r
			}
		}
		if best > 0 && best <= 5 {
			m.hit5++
		}
		if best > 0 {
			m.mrr += 1 / float64(best)
		}
		if rel > 0 {
			m.recall5 += float64(found) / float64(rel)
		}
		m.n++
	}
	m.hit5 /= float64(m.n)
	m.mrr /= float64(m.n)
	m.recall5 /= float64(m.n)
	return m
}

func TestRetrievalQuality(t *testing.T) {
	tests := []struct {
		name    string
		tools   func(testing.TB) []config.ToolMetadata
		queries string
		floor   metrics
	}{
		// Measured without query expansion (DefaultFeatures, 2026-11-29):
		// corpus_v2 0.712 / 0.473 / 0.654, LiveMCPTool 0.679 / 0.508.
		{"corpus_v2", corpusV2, "corpus_v2.queries.json", metrics{hit5: 0.69, mrr: 0.46, recall5: 0.63}},
		{"livemcptool", liveMCPTools, "livemcptool.queries.json", metrics{hit5: 0.66, mrr: 0.49}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := newIndex(t, Options{})
			load(t, ix, tc.tools(t))
			qs := loadQueries(t, tc.queries)
			got := evaluate(t, ix, qs, "tune")
			t.Logf("tune (%d queries): hit@5 %.3f, MRR %.3f, recall@5 %.3f", got.n, got.hit5, got.mrr, got.recall5)
			held := evaluate(t, ix, qs, "heldout")
			t.Logf("heldout (%d queries, not asserted): hit@5 %.3f, MRR %.3f, recall@5 %.3f", held.n, held.hit5, held.mrr, held.recall5)
			if got.n < 40 {
				t.Fatalf("got %d tune queries, want at least 40", got.n)
			}
			if got.hit5 < tc.floor.hit5 || got.mrr < tc.floor.mrr || got.recall5 < tc.floor.recall5 {
				t.Errorf("got hit@5 %.3f, MRR %.3f, recall@5 %.3f; want at least %.2f, %.2f, %.2f",
					got.hit5, got.mrr, got.recall5, tc.floor.hit5, tc.floor.mrr, tc.floor.recall5)
			}
		})
	}
}
