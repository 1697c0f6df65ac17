package expand

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestShapeSweep compares where expansion clauses go in the query (see
// shape) across a grid of options, on the tune halves only, with the
// harness's replay of the index's query. A tuning aid: run with
// -expand.sweep.
func TestShapeSweep(t *testing.T) {
	if !*sweep {
		t.Log("grid not run: pass -expand.sweep to retune")
		return
	}
	v := vectors(t)
	type set struct {
		h  *harness
		qs []gradedQuery
	}
	var sets []set
	for _, c := range corpora {
		sets = append(sets, set{newHarness(t, c.tools(t)), loadQueries(t, c.queries)})
	}
	type result struct {
		label string
		m     []metrics
		sum   float64
	}
	var results []result
	run := func(label string, o *Options, sh shape) {
		r := result{label: label}
		for _, s := range sets {
			var exp func([]string) []WeightedTerm
			if o != nil {
				e := New(v, s.h.vocab, *o)
				exp = func(terms []string) []WeightedTerm { return e.Expand(terms, nil) }
			}
			m := s.h.evaluate(t, s.qs, "tune", exp, sh)
			r.m = append(r.m, m)
			r.sum += m.hit5 + m.mrr
		}
		results = append(results, r)
	}
	run("none", nil, shapeOuter)
	shapes := map[shape]string{shapeOuter: "outer", shapeGrouped: "grouped", shapeOneClause: "one"}
	for _, sh := range []shape{shapeOuter, shapeGrouped, shapeOneClause} {
		for _, n := range []int{1, 2, 3} {
			for _, ms := range []float64{0.4, 0.5, 0.6} {
				for _, uw := range []float64{0.6, 1} {
					for _, kw := range []float64{0, 0.2} {
						o := Options{Neighbors: n, MinSimilarity: ms, UnknownWeight: uw, KnownWeight: kw}
						run(fmt.Sprintf("%-7s n%d sim%.2f unknown%.1f known%.1f", shapes[sh], n, ms, uw, kw), &o, sh)
					}
				}
			}
		}
	}
	base := results[0]
	sort.SliceStable(results[1:], func(i, j int) bool { return results[1+i].sum > results[1+j].sum })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-50s  cv2 hit5  MRR    lmt hit5  MRR", "")
	for i, r := range results {
		if i > 40 && r.label != base.label {
			break
		}
		fmt.Fprintf(&b, "\n%-50s  %.3f     %.3f  %.3f     %.3f", r.label, r.m[0].hit5, r.m[0].mrr, r.m[1].hit5, r.m[1].mrr)
	}
	t.Log(b.String())
}
