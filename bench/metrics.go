package bench

import (
	"math"
)

// Quality is the retrieval quality of one ranking function over a set of
// graded queries. Every field but Queries is a mean over the queries, in
// [0, 1]. The JSON names are part of the report schema (docs/bench.md).
type Quality struct {
	// Queries is how many queries the means are taken over.
	Queries int `json:"queries"`
	// RecallAt1 .. RecallAt10: the fraction of queries whose relevance-2 tool
	// is among the first k results.
	RecallAt1  float64 `json:"recall_at_1"`
	RecallAt3  float64 `json:"recall_at_3"`
	RecallAt5  float64 `json:"recall_at_5"`
	RecallAt10 float64 `json:"recall_at_10"`
	// MRR is the mean reciprocal rank of the relevance-2 tool (0 when absent).
	MRR float64 `json:"mrr"`
	// NDCGAt10 is normalized discounted cumulative gain at 10 with graded
	// gains 2^rel-1, a log2(rank+1) discount and the ideal ranking built from
	// every label of the query.
	NDCGAt10 float64 `json:"ndcg_at_10"`
	// MAP is mean average precision, counting a tool relevant when its label
	// is at least 1.
	MAP float64 `json:"map"`
}

// target returns the tool id labelled relevance 2; validated query sets have
// exactly one.
func (q Query) target() string {
	for _, l := range q.Labels {
		if l.Relevance == 2 {
			return l.ToolID
		}
	}
	return ""
}

// rankOf returns the 1-based position of id in ranked, or 0 when absent.
func rankOf(ranked []string, id string) int {
	for i, r := range ranked {
		if r == id {
			return i + 1
		}
	}
	return 0
}

// reciprocalRank is 1/rank of the query's relevance-2 tool, 0 when it was not
// retrieved.
func reciprocalRank(q Query, ranked []string) float64 {
	r := rankOf(ranked, q.target())
	if r == 0 {
		return 0
	}
	return 1 / float64(r)
}

// gain is the graded gain 2^rel - 1 used by nDCG.
func gain(rel int) float64 { return math.Exp2(float64(rel)) - 1 }

// ndcgAt computes nDCG@k: DCG of the first k results over the DCG of the best
// possible ordering of the query's labels. Unlabelled results gain nothing.
func ndcgAt(q Query, ranked []string, k int) float64 {
	rel := make(map[string]int, len(q.Labels))
	for _, l := range q.Labels {
		rel[l.ToolID] = l.Relevance
	}
	var dcg float64
	for i, id := range ranked {
		if i >= k {
			break
		}
		dcg += gain(rel[id]) / math.Log2(float64(i+2))
	}
	// Ideal: labels sorted by relevance, highest first. Sorting a copy keeps
	// the caller's query untouched.
	ideal := make([]int, 0, len(q.Labels))
	for _, l := range q.Labels {
		ideal = append(ideal, l.Relevance)
	}
	sortDesc(ideal)
	var idcg float64
	for i, r := range ideal {
		if i >= k {
			break
		}
		idcg += gain(r) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func sortDesc(xs []int) {
	// Insertion sort: label lists hold a handful of entries.
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] > xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

// averagePrecision is the mean of precision@i over the ranks i holding a
// relevant tool (label >= 1), divided by the number of relevant labels so a
// relevant tool that was never retrieved counts as a miss.
func averagePrecision(q Query, ranked []string) float64 {
	relevant := make(map[string]bool, len(q.Labels))
	for _, l := range q.Labels {
		if l.Relevance >= 1 {
			relevant[l.ToolID] = true
		}
	}
	if len(relevant) == 0 {
		return 0
	}
	var hits int
	var sum float64
	for i, id := range ranked {
		if relevant[id] {
			hits++
			sum += float64(hits) / float64(i+1)
		}
	}
	return sum / float64(len(relevant))
}

// Score computes the mean quality of rankings[i] answering queries[i]. A
// ranking lists tool ids best first; it may be shorter than 10.
func Score(queries []Query, rankings [][]string) Quality {
	n := len(queries)
	if n == 0 {
		return Quality{}
	}
	var q Quality
	q.Queries = n
	for i, query := range queries {
		var ranked []string
		if i < len(rankings) {
			ranked = rankings[i]
		}
		r := rankOf(ranked, query.target())
		if r >= 1 && r <= 1 {
			q.RecallAt1++
		}
		if r >= 1 && r <= 3 {
			q.RecallAt3++
		}
		if r >= 1 && r <= 5 {
			q.RecallAt5++
		}
		if r >= 1 && r <= 10 {
			q.RecallAt10++
		}
		q.MRR += reciprocalRank(query, ranked)
		q.NDCGAt10 += ndcgAt(query, ranked, 10)
		q.MAP += averagePrecision(query, ranked)
	}
	f := float64(n)
	q.RecallAt1 = round4(q.RecallAt1 / f)
	q.RecallAt3 = round4(q.RecallAt3 / f)
	q.RecallAt5 = round4(q.RecallAt5 / f)
	q.RecallAt10 = round4(q.RecallAt10 / f)
	q.MRR = round4(q.MRR / f)
	q.NDCGAt10 = round4(q.NDCGAt10 / f)
	q.MAP = round4(q.MAP / f)
	return q
}

// round4 rounds to four decimals so reports print stable, readable figures
// and summation order in floating point can never leak into the bytes.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
