package index

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// rank is the ranking policy over the candidates m of request r: a
// mentioned server's matches are lifted by a share of the best score, the
// server prior (when on) adds each server's coverage of the query, a
// deprecated tool's score is scaled down, quoted tools lead in the order
// the query names them, and equal scores are ordered by id. Each hit
// carries its coverage of the query. The caller holds statsMu for reading.
func (ix *Index) rank(r request, m matches, limit int) []Hit {
	f := ix.features
	scores := m.scores
	for _, id := range m.mentioned {
		scores[id] += f.ServerMentionWeight * m.best
	}
	idf := ix.lookup.idf(r.terms)
	if f.ServerPrior > 0 {
		for id, sc := range scores {
			server, _, _ := config.SplitToolID(id)
			scores[id] = sc + f.ServerPrior*m.best*coverage(r.terms, idf, r.syns, ix.stats[server].Terms, nil)
		}
	}
	if f.DeprecatedWeight < 1 && ix.lookup.deprecated > 0 {
		for id, sc := range scores {
			server, name, _ := config.SplitToolID(id)
			if _, ok := slices.BinarySearch(ix.stats[server].Deprecated, name); ok {
				scores[id] = sc * f.DeprecatedWeight
			}
		}
	}
	top := 0.0
	for _, sc := range scores {
		top = max(top, sc)
	}
	for i, id := range r.quoted {
		// Quoted tools lead, in the order the query names them.
		scores[id] = top + 1 + float64(len(r.quoted)-i)
	}

	hits := make([]Hit, 0, len(scores))
	for id, sc := range scores {
		server, name, _ := config.SplitToolID(id)
		learned := ix.learnedOnly(r.terms, server, name)
		hits = append(hits, Hit{ID: id, Server: server, Name: name, Score: sc,
			Coverage: coverage(r.terms, idf, r.syns, ix.stats[server].ToolTerms[name], learned), Learned: learned})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// priorDepth is how many more candidates than asked for a search ranks
// when the server prior may reorder them.
const priorDepth = 30

// idf returns the inverse document frequency of each term among tools, in
// BM25's form; a term no tool holds gets the highest value.
func (l *lookup) idf(terms []string) []float64 {
	out := make([]float64, len(terms))
	n := float64(l.tools)
	for i, t := range terms {
		df := float64(l.vocab[t])
		out[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	return out
}

// coverage is the idf-weighted share of terms found in have (sorted),
// a term counting as found when have holds it or one of its synonyms syns[t],
// or the tool learned it (learned: the query terms it matches that way).
func coverage(terms []string, idf []float64, syns map[string][]string, have, learned []string) float64 {
	holds := func(t string) bool {
		_, ok := slices.BinarySearch(have, t)
		return ok || slices.Contains(learned, t)
	}
	var got, total float64
	for i, t := range terms {
		total += idf[i]
		if holds(t) || slices.ContainsFunc(syns[t], holds) {
			got += idf[i]
		}
	}
	if total == 0 {
		return 0
	}
	return got / total
}
