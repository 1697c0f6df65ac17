package bench

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func labels(pairs ...any) []Label {
	var ls []Label
	for i := 0; i < len(pairs); i += 2 {
		ls = append(ls, Label{ToolID: pairs[i].(string), Relevance: pairs[i+1].(int)})
	}
	return ls
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestPerQueryMetrics(t *testing.T) {
	tests := []struct {
		name   string
		q      Query
		ranked []string
		rr     float64
		ndcg   float64
		ap     float64
	}{
		{
			// target a at rank 2, alternative b at rank 3, unlabelled x first.
			// RR = 1/2.
			// DCG = 0/log2(2) + (2^2-1)/log2(3) + (2^1-1)/log2(4) = 3/1.5849625 + 1/2 = 2.3927893
			// IDCG = 3/log2(2) + 1/log2(3) = 3 + 0.6309298 = 3.6309298
			// nDCG = 2.3927893 / 3.6309298 = 0.6590018
			// AP: relevant {a, b}; precision@2 = 1/2, precision@3 = 2/3; (0.5 + 0.6667)/2 = 0.5833333
			name: "target second, alternative third", q: Query{Labels: labels("a", 2, "b", 1)},
			ranked: []string{"x", "a", "b"}, rr: 0.5, ndcg: 0.6590018, ap: 0.5833333,
		},
		{
			// target c first; alternative d never retrieved; e graded 0.
			// RR = 1. DCG = 3. IDCG = 3 + 1/log2(3) = 3.6309298; nDCG = 0.8262347.
			// AP: relevant {c, d}; precision@1 = 1; 1/2 = 0.5 (d is a miss).
			name: "target first, alternative missing", q: Query{Labels: labels("c", 2, "d", 1, "e", 0)},
			ranked: []string{"c", "e"}, rr: 1, ndcg: 0.8262347, ap: 0.5,
		},
		{
			name: "target absent", q: Query{Labels: labels("t", 2)},
			ranked: []string{"x", "y"}, rr: 0, ndcg: 0, ap: 0,
		},
		{
			// target at rank 7: RR = 1/7; DCG = 3/log2(8) = 1; IDCG = 3; nDCG = 1/3.
			// AP = (1/7)/1.
			name: "target seventh", q: Query{Labels: labels("t", 2)},
			ranked: []string{"1", "2", "3", "4", "5", "6", "t"}, rr: 1.0 / 7, ndcg: 1.0 / 3, ap: 1.0 / 7,
		},
		{
			// target at rank 11 is outside nDCG@10: DCG@10 = 0.
			// RR = 1/11, AP = 1/11.
			name: "target beyond ten", q: Query{Labels: labels("t", 2)},
			ranked: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "t"}, rr: 1.0 / 11, ndcg: 0, ap: 1.0 / 11,
		},
		{
			// A rel-1 tool ranked above the target: DCG = 1/1 + 3/log2(3) = 1 + 1.8927893 = 2.8927893;
			// IDCG = 3.6309298; nDCG = 0.7967076. AP = (1/1 + 2/2)/2 = 1.
			name: "alternative above target", q: Query{Labels: labels("a", 2, "b", 1)},
			ranked: []string{"b", "a"}, rr: 0.5, ndcg: 0.7967076, ap: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reciprocalRank(tc.q, tc.ranked); !near(got, tc.rr) {
				t.Errorf("reciprocal rank: got %.7f, want %.7f", got, tc.rr)
			}
			if got := ndcgAt(tc.q, tc.ranked, 10); !near(got, tc.ndcg) {
				t.Errorf("nDCG@10: got %.7f, want %.7f", got, tc.ndcg)
			}
			if got := averagePrecision(tc.q, tc.ranked); !near(got, tc.ap) {
				t.Errorf("average precision: got %.7f, want %.7f", got, tc.ap)
			}
		})
	}
}

func TestScore(t *testing.T) {
	queries := []Query{
		{ID: "A", Labels: labels("a", 2, "b", 1)},
		{ID: "B", Labels: labels("c", 2, "d", 1, "e", 0)},
		{ID: "C", Labels: labels("t", 2)},
		{ID: "D", Labels: labels("t", 2)},
	}
	rankings := [][]string{
		{"x", "a", "b"},                     // target at 2
		{"c", "e"},                          // target at 1
		{"x", "y"},                          // target absent
		{"1", "2", "3", "4", "5", "6", "t"}, // target at 7
	}
	// recall@1 = 1/4 (B); @3 = 2/4 (A, B); @5 = 2/4; @10 = 3/4 (A, B, D).
	// MRR = (1/2 + 1 + 0 + 1/7)/4 = 1.6428571/4 = 0.4107143 -> 0.4107.
	// nDCG@10 = (0.6590018 + 0.8262347 + 0 + 0.3333333)/4 = 1.8185698/4 = 0.4546425 -> 0.4546.
	// MAP = (0.5833333 + 0.5 + 0 + 0.1428571)/4 = 1.2261905/4 = 0.3065476 -> 0.3065.
	want := Quality{
		Queries: 4, RecallAt1: 0.25, RecallAt3: 0.5, RecallAt5: 0.5, RecallAt10: 0.75,
		MRR: 0.4107, NDCGAt10: 0.4546, MAP: 0.3065,
	}
	if diff := cmp.Diff(want, Score(queries, rankings)); diff != "" {
		t.Errorf("Score mismatch (-want +got):\n%s", diff)
	}
	if got := Score(nil, nil); got != (Quality{}) {
		t.Errorf("Score of no queries: got %+v, want zero", got)
	}
}

func TestNDCGDoesNotReorderLabels(t *testing.T) {
	q := Query{Labels: labels("b", 1, "a", 2)}
	before := append([]Label(nil), q.Labels...)
	ndcgAt(q, []string{"a"}, 10)
	if diff := cmp.Diff(before, q.Labels); diff != "" {
		t.Errorf("ndcgAt mutated the labels (-before +after):\n%s", diff)
	}
}
