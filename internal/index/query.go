package index

import (
	"slices"

	"github.com/blevesearch/bleve/v2/search/query"
)

// queryPlan says which fields a query searches and with what boosts. Adding
// a field to the mapping and a line here is all a new signal needs.
//
// Each query term becomes a disjunction of that term over the fields, and
// the query is a disjunction over its terms. Bleve multiplies a
// disjunction's summed score by the share of its clauses that matched
// ("coord"), so the outer coord is the share of query terms a tool matches
// anywhere. A tool matching most of the query therefore beats one whose
// short name happens to contain a single generic query word ("get", "move",
// "branch"): the failure of one boosted match query per field, where the
// name clause's coord is all that a one-word name needs to win. (Boosts
// must sit on the term queries: Bleve ignores a disjunction's own boost.)
type queryPlan struct {
	fields []FieldBoost
}

// The default fields and boosts (DefaultFeatures().Fields) were chosen on
// the "tune" halves of the query sets in bench/queries (52 corpus_v2
// queries, 56 LiveMCPTool queries), never on the held-back halves. First
// search, BM25 with true average field lengths, before query handling and
// expansion (2026-11-29):
//
//	fields (boosts)                   cv2 recall@5  cv2 MRR  LMT hit@5  LMT MRR
//	all                               0.609         0.460    0.643      0.478
//	all, name .5, params .5           0.615         0.469    0.661      0.502  ← chosen
//	all, name 1, params .5            0.615         0.451    0.679      0.503
//	all, name .5, desc .5, params .5  0.599         0.449    0.643      0.530
//	all, desc .5, params .5           0.615         0.487    0.589      0.465
//
// Since issue 17 the index holds each tool's full metadata, parameter
// descriptions in the combined field only, and the params field (parameter
// names, titles, enum values) weighs 0.25: with descriptions in the params
// field at 0.5, a word in a parameter description counted more than the
// same word in the tool's own description (docs/retrieval.md).
//
// A flat disjunction of every (term, field) clause and one match query per
// field scored within a point or two of these; the per-term shape is kept
// for the reason above. The spread is small: vocabulary mismatch, not
// weighting, is what the lexical index cannot fix (see issue 6). The
// profiler's ablation (mcproxy bench --ablation) re-measures these
// alternatives with the full pipeline; docs/retrieval.md has the table.
var defaultPlan = queryPlan{fields: DefaultFeatures().Fields}

// build returns the query for terms (already analyzed), their synonym
// groups, and expansion terms extra, or nil when there are no terms. A
// term's groups (group ids, searched in the synonym field with boost
// synWeight) join its own clause, so a tool matching a synonym counts as
// matching that part of the query. The expansions form one more clause of
// the outer disjunction, each term searched like a query term with its
// boosts scaled by its weight times scale, so that a tool matching a related
// word counts as matching one more part of the query, at a discount. An
// expansion that is a synonym of a query term (syns) is left out: the group
// already searches it.
//
// A term some tool learned from use (learned(t), nil meaning none) is also
// searched in the learned field with boost learnedWeight, as a third half of
// its clause, so a tool that learned the word counts as matching it.
func (p queryPlan) build(terms []string, groups map[string][]string, synWeight float64, syns map[string][]string, extra []WeightedTerm, scale float64, grouped bool,
	learned func(string) bool, learnedWeight float64) query.Query {
	if len(terms) == 0 {
		return nil
	}
	termQueries := make([]query.Query, 0, len(terms)+1)
	var eq []query.Query
	for _, t := range terms {
		fq := p.fieldQueries(t, 1)
		if grouped {
			for _, e := range extra {
				if e.From == t && e.Weight > 0 && !slices.Contains(terms, e.Term) {
					fq = append(fq, p.fieldQueries(e.Term, e.Weight*scale)...)
				}
			}
		}
		var clause query.Query = query.NewDisjunctionQuery(fq)
		if len(groups[t]) > 0 {
			// The word itself and its groups as two halves of the clause:
			// Bleve scales a disjunction by the share of its parts that
			// matched, so a tool matching only a synonym must not be
			// scaled down by every field the word itself was searched in.
			gq := make([]query.Query, 0, len(groups[t]))
			for _, id := range groups[t] {
				q := query.NewTermQuery(id)
				q.SetField(fieldSyn)
				q.SetBoost(synWeight)
				gq = append(gq, q)
			}
			clause = query.NewDisjunctionQuery([]query.Query{clause, query.NewDisjunctionQuery(gq)})
		}
		if learned != nil && learned(t) {
			lq := query.NewTermQuery(t)
			lq.SetField(fieldLearned)
			lq.SetBoost(learnedWeight)
			clause = query.NewDisjunctionQuery([]query.Query{clause, lq})
		}
		termQueries = append(termQueries, clause)
	}
	for _, e := range extra {
		if e.Weight <= 0 || slices.Contains(terms, e.Term) || grouped && slices.Contains(terms, e.From) || isSynonym(syns, e.Term) {
			continue
		}
		eq = append(eq, p.fieldQueries(e.Term, e.Weight*scale)...)
	}
	if len(eq) > 0 {
		termQueries = append(termQueries, query.NewDisjunctionQuery(eq))
	}
	return query.NewDisjunctionQuery(termQueries)
}

// fieldQueries returns term searched in each field of the plan, boosts
// scaled by weight.
func (p queryPlan) fieldQueries(term string, weight float64) []query.Query {
	fq := make([]query.Query, 0, len(p.fields))
	for _, f := range p.fields {
		q := query.NewTermQuery(term)
		q.SetField(f.Field)
		q.SetBoost(f.Boost * weight)
		fq = append(fq, q)
	}
	return fq
}

// isSynonym reports whether term is already searched as a synonym.
func isSynonym(syns map[string][]string, term string) bool {
	for _, ss := range syns {
		if slices.Contains(ss, term) {
			return true
		}
	}
	return false
}
