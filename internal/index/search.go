package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Hit is one search result.
type Hit struct {
	// ID is the tool id, "server:tool".
	ID string
	// Server and Name are the two halves of ID.
	Server, Name string
	// Score is the BM25-based relevance: only comparable between hits of the
	// same search.
	Score float64
	// Coverage is the share of the query the tool's text holds: the
	// query's distinct terms weighted by their rarity among tools (inverse
	// document frequency), 0 to 1. Unlike Score it is comparable between
	// searches; a low value at the top says nothing matched well. Words
	// the tool learned from use count as held.
	Coverage float64
	// Learned are the query's terms this tool matched only through words
	// it learned from use (Options.Learned), not its own text.
	Learned []string
}

// WeakCoverage is the Coverage below which a hit is a weak match. Chosen on
// the tune halves of the profiler's query sets (without expansion): of the
// queries whose best hit covered less, about half missed their tool in the
// top 5; of the others, about a quarter.
const WeakCoverage = 0.15

// Weak reports whether h matches its query poorly (Coverage below
// WeakCoverage), so that a caller can offer other ways to refine.
func (h Hit) Weak() bool { return h.Coverage < WeakCoverage }

// Search returns up to limit tools matching query, best first; equal scores
// are ordered by ID so the answer is deterministic, and the answer at one
// limit is the start of the answer at any larger one (the production
// features keep this exactly; the server prior, an ablation lever, looks
// priorDepth hits further). A query that yields no searchable words (only
// stop words, say) matches nothing.
//
// A search has three steps: request reads the query (terms, synonyms,
// expansion, the servers and tools it names), match asks Bleve for the
// candidates and their BM25 scores, and rank (rank.go) applies the ranking
// policy and orders them.
func (ix *Index) Search(ctx context.Context, q string, limit int) ([]Hit, error) {
	if strings.TrimSpace(q) == "" {
		return nil, errors.New(`empty query: pass a few words describing the tool you need, e.g. "read the contents of a file"`)
	}
	if limit < 1 {
		return nil, fmt.Errorf("invalid limit %d: want 1 or more", limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return nil, ErrClosed
	}
	terms := ix.analyze(q)

	ix.statsMu.RLock()
	defer ix.statsMu.RUnlock()
	r := ix.request(q, terms)
	if r.bq == nil && len(r.quoted) == 0 {
		return nil, nil
	}
	m, err := ix.match(ctx, r, limit)
	if err != nil {
		return nil, fmt.Errorf("searching %q: %w", q, err)
	}
	return ix.rank(r, m, limit), nil
}

// request is one search as the index reads it.
type request struct {
	terms []string            // the query's distinct analyzed terms
	syns  map[string][]string // term → its synonyms the index holds
	// mentioned are the servers the query names; quoted the tools it names
	// exactly, in the query's order.
	mentioned, quoted []string
	bq                query.Query // nil when no term is searchable
}

// request reads query (analyzed into terms) under the index's features.
// The caller holds statsMu for reading.
func (ix *Index) request(q string, terms []string) request {
	f := ix.features
	r := request{terms: terms}
	var extra []WeightedTerm
	if ix.expander != nil && f.ExpansionWeight > 0 && len(terms) > 0 {
		extra = ix.expandFunc()(terms, func(t string) bool { return ix.lookup.vocab[t] > 0 })
	}
	if f.ServerMention && f.ServerMentionWeight > 0 {
		r.mentioned = mentionedServers(q, ix.lookup.serverKeys)
	}
	if f.ExactName {
		r.quoted = quotedTools(q, ix.lookup.names, ix.lookup.ids)
	}
	var groups map[string][]string
	if ix.lex != nil && f.SynonymWeight > 0 {
		inIndex := func(t string) bool { return ix.lookup.vocab[t] > 0 }
		r.syns = ix.lex.others.of(terms, inIndex)
		groups = ix.lex.groupsOf(terms, inIndex)
	}
	var learned func(string) bool
	if f.LearnedWeight > 0 && len(ix.lookup.learned) > 0 {
		learned = func(t string) bool { return ix.lookup.learned[t] > 0 }
	}
	r.bq = ix.plan.build(terms, groups, f.SynonymWeight, r.syns, extra, f.ExpansionWeight, f.ExpansionGrouped, learned, f.LearnedWeight)
	return r
}

// matches are the candidates of a search as Bleve scored them.
type matches struct {
	// scores holds each candidate's BM25 score: the best depth hits of the
	// whole index, and the best of each mentioned server.
	scores map[string]float64
	// best is the top BM25 score of the whole index.
	best float64
	// mentioned are the candidates found within a mentioned server.
	mentioned []string
}

// match finds the candidates of r deep enough that the first limit of the
// ranking cannot change with a deeper search: limit, plus the quoted tools
// (they are moved to the top), plus every deprecated tool (each one demoted
// out of the first limit lets another in), plus priorDepth with the server
// prior. The caller holds statsMu for reading.
func (ix *Index) match(ctx context.Context, r request, limit int) (matches, error) {
	f := ix.features
	m := matches{scores: map[string]float64{}}
	if r.bq == nil {
		return m, nil
	}
	depth := limit + len(r.quoted)
	if f.ServerPrior > 0 {
		depth += priorDepth
	}
	if f.DeprecatedWeight < 1 {
		depth += ix.lookup.deprecated
	}
	res, err := ix.search(ctx, r.bq, depth)
	if err != nil {
		return m, err
	}
	for _, h := range res.Hits {
		m.scores[h.ID] = h.Score
		m.best = max(m.best, h.Score)
	}
	for _, server := range r.mentioned {
		// The named server's own matches, however far down the full
		// ranking they are. One search per server: with Bleve 2.6.3, a
		// filter on a disjunction of several servers fails in on-disk
		// indexes ("field stat for bm25 not present *").
		tq := query.NewTermQuery(server)
		tq.SetField(fieldServer)
		within := query.NewBooleanQuery([]query.Query{r.bq}, nil, nil)
		within.AddFilter(tq)
		res, err := ix.search(ctx, within, min(ix.stats[server].Docs, limit+len(r.quoted)+ix.lookup.deprecated))
		if err != nil {
			return m, err
		}
		for _, h := range res.Hits {
			m.scores[h.ID] = h.Score
			m.mentioned = append(m.mentioned, h.ID)
		}
	}
	return m, nil
}

// search runs q with BM25 statistics that match the index exactly and
// returns its best limit hits, equal scores ordered by id as Search orders
// them, so that the first limit hits are the start of the ranking at any
// larger limit. Bleve's own order among equals is its internal one (on
// disk, the order tools were added), and asking it to order by id costs an
// id lookup per matching tool; instead the search looks tieSlack hits past
// the cut and, when the last of them still ties with the last one kept, is
// repeated deeper until the tie is whole; the cut is made here. The caller holds statsMu for reading.
func (ix *Index) search(ctx context.Context, q query.Query, limit int) (*bleve.SearchResult, error) {
	if limit < 1 {
		return ix.searchTop(ctx, q, limit)
	}
	for size := limit + tieSlack; ; size *= 2 {
		res, err := ix.searchTop(ctx, q, size)
		if err != nil {
			return nil, err
		}
		if len(res.Hits) < size || res.Hits[size-1].Score != res.Hits[limit-1].Score {
			// Every hit that ties with the last one kept is in hand.
			slices.SortStableFunc(res.Hits, func(a, b *search.DocumentMatch) int {
				if c := cmp.Compare(b.Score, a.Score); c != 0 {
					return c
				}
				return strings.Compare(a.ID, b.ID)
			})
			res.Hits = res.Hits[:min(limit, len(res.Hits))]
			return res, nil
		}
	}
}

// tieSlack is how many hits past the cut the first search looks at: a
// tie across the cut is usually whole within it (a tool offered by several
// servers, say), so one search does.
const tieSlack = 32

// searchTop runs q for its best limit hits by score.
func (ix *Index) searchTop(ctx context.Context, q query.Query, limit int) (*bleve.SearchResult, error) {
	req := bleve.NewSearchRequestOptions(q, limit, 0, false)
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: ix.bm25}
	return ix.bleve.SearchInContext(ctx, req)
}

// analyze runs the query through textAnalyzer and returns its distinct
// terms in order of first appearance.
func (ix *Index) analyze(q string) []string {
	seen := map[string]bool{}
	var terms []string
	for _, tok := range ix.analyzer.Analyze([]byte(q)) {
		t := string(tok.Term)
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	return terms
}
