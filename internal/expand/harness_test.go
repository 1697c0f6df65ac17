package expand

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/testenv"
	datasets "github.com/mcproxy/mcproxy/internal/testenv/corpora"
)

// The harness measures expansion on the production index without touching
// internal/index: it builds the index on disk with index.New and Upsert,
// closes it, and reopens the same Bleve files read-only to (a) read the
// vocabulary of the "all" field and (b) run the index's own query shape
// (checked against index.Search, hit for hit) with extra weighted clauses.

// Field names, boosts and keys of internal/index (mapping.go, query.go,
// index.go). TestHarnessMatchesIndex fails if they drift.
const (
	hAnalyzer    = "mcproxy_text"
	hFieldAll    = "all"
	hFieldServer = "server"
	hStatsPrefix = "mcproxy.stats/"
)

var hPlan = []struct {
	field string
	boost float64
}{{"all", 1}, {"name", 0.5}, {"params", 0.25}}

type harness struct {
	bl       bleve.Index
	analyzer analysis.Analyzer
	bm25     *search.BM25Stats
	vocab    []string
}

// newHarness indexes tools with the production index and reopens its files.
func newHarness(t testing.TB, tools []config.ToolMetadata) *harness {
	t.Helper()
	dir := t.TempDir()
	ix, err := index.New(index.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	servers, groups := byServer(tools)
	for _, s := range servers {
		if err := ix.Upsert(s, groups[s]); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	bl, err := bleve.Open(filepath.Join(dir, "bleve"))
	if err != nil {
		t.Fatalf("reopening the index files: %v", err)
	}
	t.Cleanup(func() { bl.Close() })
	h := &harness{bl: bl, analyzer: bl.Mapping().AnalyzerNamed(hAnalyzer)}
	if h.analyzer == nil {
		t.Fatalf("index mapping has no analyzer %q", hAnalyzer)
	}
	h.bm25 = &search.BM25Stats{FieldCardinality: map[string]int{}}
	for _, s := range h.fieldTerms(t, hFieldServer) {
		raw, err := bl.GetInternal([]byte(hStatsPrefix + s))
		if err != nil || raw == nil {
			t.Fatalf("statistics of %q: %v", s, err)
		}
		var st struct {
			Docs   int            `json:"docs"`
			Tokens map[string]int `json:"tokens"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		h.bm25.DocCount += float64(st.Docs)
		for f, n := range st.Tokens {
			h.bm25.FieldCardinality[f] += n
		}
	}
	h.vocab = h.fieldTerms(t, hFieldAll)
	return h
}

func (h *harness) fieldTerms(t testing.TB, field string) []string {
	t.Helper()
	dict, err := h.bl.FieldDict(field)
	if err != nil {
		t.Fatal(err)
	}
	defer dict.Close()
	var out []string
	for {
		e, err := dict.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		out = append(out, e.Term)
	}
}

// analyze returns the distinct analyzed terms of q, as index.Search does.
func (h *harness) analyze(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, tok := range h.analyzer.Analyze([]byte(q)) {
		if s := string(tok.Term); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// shape says where expansion clauses go.
type shape int

const (
	// shapeOuter: each expansion is one more clause of the outer
	// disjunction, like an extra query word with lower boosts.
	shapeOuter shape = iota
	// shapeGrouped: a query word's clause becomes a disjunction of its
	// literal clause and its expansions' clauses, so Bleve's coord counts
	// the word as matched whichever of them matches.
	shapeGrouped
	// shapeOneClause: every expansion, over every field, in one more
	// clause of the outer disjunction (internal/index's shape at the time
	// of writing).
	shapeOneClause
)

// fieldsClause is the index's per-term disjunction over fields, with every
// boost scaled by w.
func fieldsClause(term string, w float64) query.Query {
	qs := make([]query.Query, 0, len(hPlan))
	for _, f := range hPlan {
		q := query.NewTermQuery(term)
		q.SetField(f.field)
		q.SetBoost(f.boost * w)
		qs = append(qs, q)
	}
	return query.NewDisjunctionQuery(qs)
}

// build returns the query for terms with expansions placed per sh.
func build(terms []string, exp []WeightedTerm, sh shape) query.Query {
	if len(terms) == 0 {
		return nil
	}
	byFrom := map[string][]WeightedTerm{}
	for _, e := range exp {
		byFrom[e.From] = append(byFrom[e.From], e)
	}
	var outer []query.Query
	for _, t := range terms {
		lit := fieldsClause(t, 1)
		if sh == shapeGrouped && len(byFrom[t]) > 0 {
			group := []query.Query{lit}
			for _, e := range byFrom[t] {
				group = append(group, fieldsClause(e.Term, e.Weight))
			}
			outer = append(outer, query.NewDisjunctionQuery(group))
			continue
		}
		outer = append(outer, lit)
	}
	switch sh {
	case shapeOuter:
		for _, e := range exp {
			outer = append(outer, fieldsClause(e.Term, e.Weight))
		}
	case shapeOneClause:
		var flat []query.Query
		for _, e := range exp {
			flat = append(flat, fieldsClause(e.Term, e.Weight).(*query.DisjunctionQuery).Disjuncts...)
		}
		if len(flat) > 0 {
			outer = append(outer, query.NewDisjunctionQuery(flat))
		}
	}
	return query.NewDisjunctionQuery(outer)
}

type hit struct {
	id    string
	score float64
}

// sortHits orders hits by score, then id, as index.Search does.
func sortHits(hs []hit) {
	sort.SliceStable(hs, func(i, j int) bool {
		if hs[i].score != hs[j].score {
			return hs[i].score > hs[j].score
		}
		return hs[i].id < hs[j].id
	})
}

func (h *harness) search(t testing.TB, q query.Query, limit int) []hit {
	t.Helper()
	if q == nil {
		return nil
	}
	req := bleve.NewSearchRequestOptions(q, limit, 0, false)
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: h.bm25}
	res, err := h.bl.SearchInContext(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]hit, len(res.Hits))
	for i, d := range res.Hits {
		out[i] = hit{d.ID, d.Score}
	}
	sortHits(out)
	return out
}

// metrics are the profiler's retrieval measures: hit@5 (a relevance-2 tool
// in the top 5), MRR of the best relevance-2 tool, recall@5 of every
// relevant tool.
type metrics struct {
	hit5, mrr, recall5 float64
	n                  int
}

func score(hits []hit, labels []testenv.Label) (hit5, rr, recall5 float64) {
	rank := map[string]int{}
	for i, h := range hits {
		rank[h.id] = i + 1
	}
	best, found, rel := 0, 0, 0
	for _, l := range labels {
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
		hit5 = 1
	}
	if best > 0 {
		rr = 1 / float64(best)
	}
	if rel > 0 {
		recall5 = float64(found) / float64(rel)
	}
	return
}

// evaluate scores queries of one split with expansion produced by exp (nil
// = none) in shape sh.
func (h *harness) evaluate(t testing.TB, qs []gradedQuery, split string, exp func([]string) []WeightedTerm, sh shape) metrics {
	var m metrics
	for _, q := range qs {
		if q.Split != split {
			continue
		}
		terms := h.analyze(q.Query)
		var extra []WeightedTerm
		if exp != nil {
			extra = exp(terms)
		}
		a, b, c := score(h.search(t, build(terms, extra, sh), 10), q.Labels)
		m.hit5 += a
		m.mrr += b
		m.recall5 += c
		m.n++
	}
	if m.n > 0 {
		m.hit5 /= float64(m.n)
		m.mrr /= float64(m.n)
		m.recall5 /= float64(m.n)
	}
	return m
}

// TestHarnessMatchesIndex checks that the harness, without expansion, ranks
// exactly as index.Search does, so what it measures is the production
// index plus expansion and nothing else.
func TestHarnessMatchesIndex(t *testing.T) {
	for _, c := range corpora {
		t.Run(c.name, func(t *testing.T) {
			tools := c.tools(t)
			h := newHarness(t, tools)
			// The harness replays the per-term field disjunction only: the
			// index's server-mention and exact-name boosts, its synonym
			// lexicon and its demotion of deprecated tools are off here, so
			// a shape sweep measures expansion alone (TestExpansionEffect
			// measures it with the whole index).
			f := index.DefaultFeatures()
			f.ServerMention, f.ExactName, f.Synonyms = false, false, false
			f.DeprecatedWeight = 1
			ix, err := index.New(index.Options{Dir: t.TempDir(), Features: &f})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ix.Close() })
			servers, groups := byServer(tools)
			for _, s := range servers {
				if err := ix.Upsert(s, groups[s]); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range loadQueries(t, c.queries) {
				want, err := ix.Search(context.Background(), q.Query, 10)
				if err != nil {
					t.Fatal(err)
				}
				got := h.search(t, build(h.analyze(q.Query), nil, shapeOuter), 10)
				if len(got) != len(want) {
					t.Fatalf("%s: got %d hits, want %d", q.ID, len(got), len(want))
				}
				// Both sides order equal scores by id; the last place may
				// differ among tools tied with it, cut at the limit.
				sortHits(got)
				for i := range got {
					if i == len(got)-1 && math.Abs(got[i].score-want[i].Score) <= 1e-9 {
						break
					}
					if got[i].id != want[i].ID || math.Abs(got[i].score-want[i].Score) > 1e-9 {
						t.Fatalf("%s: hit %d: got %s %.6f, want %s %.6f", q.ID, i, got[i].id, got[i].score, want[i].ID, want[i].Score)
					}
				}
			}
		})
	}
}

// Corpora and graded queries, read as internal/index's tests read them.

// gradedQuery is one query of a set in bench/queries.
type gradedQuery = testenv.Query

var corpora = []struct {
	name    string
	tools   func(testing.TB) []config.ToolMetadata
	queries string
}{
	{"corpus_v2", corpusV2, "corpus_v2.queries.json"},
	{"livemcptool", liveMCPTools, "livemcptool.queries.json"},
}

func loadQueries(t testing.TB, name string) []gradedQuery {
	t.Helper()
	return testenv.Queries(t, name)
}

func corpusV2(t testing.TB) []config.ToolMetadata {
	t.Helper()
	return datasets.Metadata(datasets.CorpusV2(t))
}

func liveMCPTools(t testing.TB) []config.ToolMetadata {
	t.Helper()
	return datasets.Metadata(datasets.LiveMCPTools(t))
}

// byServer groups tools by server, in order of first appearance.
func byServer(tools []config.ToolMetadata) ([]string, map[string][]config.ToolMetadata) {
	var servers []string
	groups := map[string][]config.ToolMetadata{}
	for _, t := range tools {
		if _, ok := groups[t.ServerName]; !ok {
			servers = append(servers, t.ServerName)
		}
		groups[t.ServerName] = append(groups[t.ServerName], t)
	}
	return servers, groups
}
