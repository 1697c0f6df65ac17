// Package index is mcproxy's full-text index of tool metadata: the search
// behind retrieve_tools. It is a Bleve index with an explicit mapping (tool
// names split into words, English stemming, parameter names and
// descriptions) scored with BM25 rather than Bleve's default TF-IDF. On top
// of BM25, Search ranks a tool the query names exactly first, prefers the
// tools of a server the query names, can expand queries with related words
// (Options.Expander) and reports how much of the query each hit covers, so
// a caller can tell a weak answer from a good one (Features has each
// mechanism; docs/retrieval.md the measurements behind them). Tools
// are replaced per server in one atomic batch, so a search never sees half
// an update. The index lives in memory or in a directory; the directory is
// a cache that New rebuilds from scratch when it is stale or damaged, which
// is safe because upstream servers are the source of truth.
//
// The package starts one goroutine of its own: with an Expander, the
// builder of the expansion function (see vocabularyChanged), which Close
// waits for. It logs only a panic of the Expander (Options.Logger), and
// knows nothing about MCP.
package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Options configures New.
type Options struct {
	// Dir is the directory holding the index (typically <data_dir>/index).
	// It is created if missing. Empty means an in-memory index that
	// disappears on Close; it suits tests and small tool sets, while an
	// on-disk index searches faster at thousands of tools.
	Dir string
	// Features selects the retrieval mechanisms; nil means
	// DefaultFeatures(). Other values are for measuring (the profiler's
	// ablation).
	Features *Features
	// Expander, when set, provides query expansion (related terms, e.g.
	// from word embeddings, weighted below the query's own words). It is
	// called with the index's vocabulary, sorted, in the background after
	// the vocabulary changed (or by the first search after the change, if
	// that comes before the background build is done); the ExpandFunc it
	// returns serves searches until the next change. It must be safe to
	// call from any goroutine.
	Expander func(vocab []string) ExpandFunc
	// Logger receives the one thing the index logs: an Expander that
	// panicked (searches then run without expansion until the tools
	// change). nil means no logging.
	Logger *zap.Logger
	// Synonyms are groups of words a query may use interchangeably, added
	// to the built-in lexicon (synonyms.txt) when Features.Synonyms is
	// on: {"k8s", "kubernetes"} lets "k8s" find tools that say
	// "kubernetes". Each group needs two words or more.
	Synonyms [][]string
}

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
	// searches; a low value at the top says nothing matched well.
	Coverage float64
}

// WeakCoverage is the Coverage below which a hit is a weak match. Chosen on
// the tune halves of the profiler's query sets (without expansion): of the
// queries whose best hit covered less, about half missed their tool in the
// top 5; of the others, about a quarter.
const WeakCoverage = 0.15

// Weak reports whether h matches its query poorly (Coverage below
// WeakCoverage), so that a caller can offer other ways to refine.
func (h Hit) Weak() bool { return h.Coverage < WeakCoverage }

// Index is a searchable set of tools. All methods are safe for concurrent
// use; a Search running during an Upsert sees the index either before or
// after the whole batch.
type Index struct {
	mapping  *mapping.IndexMappingImpl
	analyzer analysis.Analyzer // textAnalyzer, resolved once
	plan     queryPlan
	features Features
	expander func(vocab []string) ExpandFunc
	log      *zap.Logger
	lex      *lexicon // nil when Features.Synonyms is off
	skipped  []string // words of Options.Synonyms that take no part

	expMu       sync.Mutex // guards the five below
	expand      ExpandFunc // built by expander for vocabulary version expVersion
	expVersion  int
	expVocab    []string       // the vocabulary expand was built from
	expDirty    bool           // the vocabulary changed since the builder last looked
	expBuilding bool           // a builder goroutine is running
	expWG       sync.WaitGroup // the builder goroutine; Close waits for it

	wmu sync.Mutex // serializes writers: the read-then-write of Upsert must not interleave

	mu     sync.RWMutex // guards bleve against use after Close
	bleve  bleve.Index
	closed bool

	// statsMu is held for reading by each search and for writing while a
	// batch lands, so a search always pairs the index with its statistics.
	statsMu sync.RWMutex
	stats   map[string]serverStats // by server; written only under wmu, persisted with each batch
	bm25    *search.BM25Stats      // totals of stats, as Bleve takes them; replaced, never modified
	lookup  *lookup                // derived from stats
}

// serverStats is what search needs to know about one server's documents:
// how many there are and how many tokens each field holds in total (for
// BM25), the distinct terms of their "all" fields (the vocabulary query
// expansion is restricted to) and the tool names (for exact-name matches).
type serverStats struct {
	Docs   int            `json:"docs"`
	Tokens map[string]int `json:"tokens"`
	Terms  []string       `json:"terms"`
	Tools  []string       `json:"tools"`
	// ToolTerms holds each tool's distinct "all" terms, sorted, by name.
	ToolTerms map[string][]string `json:"tool_terms"`
	// Deprecated names the tools whose description marks them deprecated
	// (see deprecated), sorted.
	Deprecated []string `json:"deprecated,omitempty"`
}

// lookup holds the in-memory tables derived from every server's
// statistics, updated server by server as batches land.
type lookup struct {
	vocab      map[string]int      // term → number of tools holding it
	tools      int                 // number of tools
	version    int                 // incremented by every update
	serverKeys map[string][]string // serverKeys spelling → servers
	names      map[string][]string // lower-cased tool name → ids
	ids        map[string]string   // lower-cased id → id
	deprecated int                 // number of deprecated tools
}

func newLookup() *lookup {
	return &lookup{vocab: map[string]int{}, serverKeys: map[string][]string{}, names: map[string][]string{}, ids: map[string]string{}}
}

// update replaces server's entries: old out, new in.
func (l *lookup) update(server string, old, new serverStats, hadOld bool) {
	l.version++
	if hadOld {
		l.tools -= len(old.Tools)
		l.deprecated -= len(old.Deprecated)
		for _, terms := range old.ToolTerms {
			for _, t := range terms {
				if l.vocab[t]--; l.vocab[t] <= 0 {
					delete(l.vocab, t)
				}
			}
		}
		for _, name := range old.Tools {
			id := config.ToolID(server, name)
			delete(l.ids, strings.ToLower(id))
			key := strings.ToLower(name)
			l.names[key] = slices.DeleteFunc(slices.Clone(l.names[key]), func(x string) bool { return x == id })
			if len(l.names[key]) == 0 {
				delete(l.names, key)
			}
		}
		for _, k := range serverKeys(server) {
			l.serverKeys[k] = slices.DeleteFunc(slices.Clone(l.serverKeys[k]), func(x string) bool { return x == server })
			if len(l.serverKeys[k]) == 0 {
				delete(l.serverKeys, k)
			}
		}
	}
	if new.Docs == 0 {
		return
	}
	l.tools += len(new.Tools)
	l.deprecated += len(new.Deprecated)
	for _, terms := range new.ToolTerms {
		for _, t := range terms {
			l.vocab[t]++
		}
	}
	for _, name := range new.Tools {
		id := config.ToolID(server, name)
		l.ids[strings.ToLower(id)] = id
		key := strings.ToLower(name)
		l.names[key] = append(slices.Clone(l.names[key]), id)
		slices.Sort(l.names[key])
	}
	for _, k := range serverKeys(server) {
		l.serverKeys[k] = append(slices.Clone(l.serverKeys[k]), server)
		slices.Sort(l.serverKeys[k])
	}
}

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("index is closed")

// Keys in the index's internal storage, written in the same batches as the
// documents so they can never disagree with them.
var (
	internalStampKey    = []byte("mcproxy.mapping") // mappingStamp
	internalStatsPrefix = "mcproxy.stats/"          // + server name: serverStats as JSON
)

func statsKey(server string) []byte { return []byte(internalStatsPrefix + server) }

// boltTimeout bounds waiting for the lock on an on-disk index; without it a
// second mcproxy on the same data_dir would hang forever.
const boltTimeout = 2 * time.Second

// scorchConfig is the configuration of an on-disk index. Batches stay safe
// (a batch returns once it is on disk): Scorch's unsafe_batch builds about
// twice as fast, but its Close does not wait for the last batches to reach
// the disk, so a clean restart would lose them.
func scorchConfig() map[string]any {
	return map[string]any{"bolt_timeout": boltTimeout.String()}
}

// New opens the index described by opts. With a Dir, an existing index is
// reused when it was built with the current mapping; an index built with
// another mapping, or one that cannot be opened, is deleted and recreated
// empty. An index locked by another process is an error, never deleted.
func New(opts Options) (*Index, error) {
	f := DefaultFeatures()
	if opts.Features != nil {
		f = *opts.Features
		f.Fields = slices.Clone(f.Fields)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	m, err := newMapping(f)
	if err != nil {
		return nil, err
	}
	a := m.AnalyzerNamed(textAnalyzer)
	if a == nil {
		return nil, fmt.Errorf("analyzer %q is not registered", textAnalyzer)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ix := &Index{mapping: m, analyzer: a, plan: queryPlan{fields: f.Fields}, features: f, expander: opts.Expander, log: log, expVersion: -1, stats: map[string]serverStats{}}
	content := fmt.Sprintf("params=%v", f.Params)
	if f.Synonyms {
		for i, g := range opts.Synonyms {
			if len(g) < 2 {
				return nil, fmt.Errorf("synonym group %d %q: want two words or more", i+1, g)
			}
		}
		// The built-in words are checked by the tests: what is skipped
		// is the user's.
		ix.lex = newLexicon(a, append(builtinGroups(), opts.Synonyms...))
		ix.skipped = ix.lex.skipped
		content += " synonyms=" + ix.lex.hash
	}
	if opts.Dir == "" {
		// Bleve's in-memory store, not Scorch without a path: an in-memory
		// Scorch never merges its segments, one per batch, so every Upsert
		// would slow searches down for good. This store searches a few times
		// slower than a merged on-disk Scorch (see the benchmarks); BM25
		// works the same because search passes its own statistics.
		ix.bleve, err = bleve.NewMemOnly(m)
		if err != nil {
			return nil, fmt.Errorf("creating in-memory index: %w", err)
		}
	} else {
		ix.bleve, ix.stats, err = openOrCreate(opts.Dir, m, content)
		if err != nil {
			return nil, err
		}
	}
	ix.bm25 = totals(ix.stats)
	ix.lookup = newLookup()
	for server, st := range ix.stats {
		ix.lookup.update(server, serverStats{}, st, false)
	}
	if len(ix.stats) > 0 {
		ix.vocabularyChanged()
	}
	return ix, nil
}

// SkippedSynonyms returns the words of Options.Synonyms that take no part
// in searches because they are not one word once analyzed: a phrase ("pull
// request"), a code-style identifier ("pull_request", which the index
// splits) or a stop word ("the").
func (ix *Index) SkippedSynonyms() []string { return slices.Clone(ix.skipped) }

// openOrCreate opens the index under dir, or creates it, and returns it with
// its persisted statistics.
func openOrCreate(dir string, m *mapping.IndexMappingImpl, content string) (bleve.Index, map[string]serverStats, error) {
	idx, stats, err := openExisting(dir, m, content)
	if idx != nil || err != nil {
		return idx, stats, err
	}
	path := filepath.Join(dir, "bleve")
	stamp, err := mappingStamp(m, content)
	if err != nil {
		return nil, nil, err
	}
	idx, err = bleve.NewUsing(path, m, scorch.Name, scorch.Name, scorchConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("creating index %s: %w", path, err)
	}
	if err := idx.SetInternal(internalStampKey, []byte(stamp)); err != nil {
		_ = idx.Close()
		return nil, nil, fmt.Errorf("stamping index %s: %w", path, err)
	}
	return idx, map[string]serverStats{}, nil
}

// openExisting opens the index under dir if there is a usable one. When
// there is none, or it is stale or damaged (and then removed), it returns
// nil and no error.
func openExisting(dir string, m *mapping.IndexMappingImpl, content string) (bleve.Index, map[string]serverStats, error) {
	stamp, err := mappingStamp(m, content)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("creating index directory: %w", err)
	}
	path := filepath.Join(dir, "bleve")
	if _, err := os.Stat(path); err != nil {
		return nil, nil, nil
	}
	idx, err := bleve.OpenUsing(path, scorchConfig())
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, nil, fmt.Errorf("opening index %s: locked by another process (is another mcproxy using this data_dir?)", path)
	}
	if err == nil {
		if stats, ok := usable(idx, stamp); ok {
			return idx, stats, nil
		}
		if err := idx.Close(); err != nil {
			return nil, nil, fmt.Errorf("closing stale index %s: %w", path, err)
		}
	}
	// Damaged, half-written or built by another version of mcproxy: the
	// index is a cache, so start again.
	if err := os.RemoveAll(path); err != nil {
		return nil, nil, fmt.Errorf("removing stale index %s: %w", path, err)
	}
	return nil, nil, nil
}

// usable reports whether idx was built with the current mapping and has
// readable statistics, and returns them.
func usable(idx bleve.Index, stamp string) (map[string]serverStats, bool) {
	got, err := idx.GetInternal(internalStampKey)
	if err != nil || string(got) != stamp {
		return nil, false
	}
	// The servers are the terms of the server field; each has its own
	// statistics entry.
	dict, err := idx.FieldDict(fieldServer)
	if err != nil {
		return nil, false
	}
	defer dict.Close()
	stats := map[string]serverStats{}
	docs := 0
	for {
		entry, err := dict.Next()
		if err != nil {
			return nil, false
		}
		if entry == nil {
			break
		}
		raw, err := idx.GetInternal(statsKey(entry.Term))
		if err != nil || raw == nil {
			return nil, false
		}
		var st serverStats
		if err := json.Unmarshal(raw, &st); err != nil || st.Docs != int(entry.Count) || len(st.Tools) != st.Docs || len(st.ToolTerms) != st.Docs {
			return nil, false
		}
		stats[entry.Term] = st
		docs += st.Docs
	}
	if n, err := idx.DocCount(); err != nil || int(n) != docs {
		return nil, false
	}
	return stats, true
}

// totals sums per-server statistics into the form Bleve's BM25 scorer takes.
// Bleve divides FieldCardinality by DocCount to get the average field
// length; left to itself it uses the number of distinct terms in the field,
// which understates the average length and so punishes every document of
// ordinary length, so we pass the true token totals.
func totals(stats map[string]serverStats) *search.BM25Stats {
	t := &search.BM25Stats{FieldCardinality: map[string]int{}}
	for _, f := range textFields {
		t.FieldCardinality[f] = 0
	}
	t.FieldCardinality[fieldServer] = 0
	t.FieldCardinality[fieldSyn] = 0
	for _, s := range stats {
		t.DocCount += float64(s.Docs)
		for f, n := range s.Tokens {
			t.FieldCardinality[f] += n
		}
	}
	return t
}

// Upsert makes tools the complete set of documents for server: new tools
// are added, changed ones replaced and tools no longer listed deleted, in
// one batch. Every tool's ServerName must equal server. Invalid input
// changes nothing.
func (ix *Index) Upsert(server string, tools []config.ToolMetadata) error {
	if err := checkServer(server); err != nil {
		return err
	}
	docs := make(map[string]map[string]any, len(tools))
	for i, t := range tools {
		switch {
		case t.ServerName != server:
			return fmt.Errorf("upserting %q: tool %d (%q) belongs to server %q", server, i, t.Name, t.ServerName)
		case strings.TrimSpace(t.Name) == "":
			return fmt.Errorf("upserting %q: tool %d has an empty name", server, i)
		}
		id := t.ID()
		if _, dup := docs[id]; dup {
			return fmt.Errorf("upserting %q: tool %q is listed twice", server, t.Name)
		}
		docs[id] = document(t, ix.features.Params)
	}
	return ix.replace(server, docs)
}

// Remove deletes every document of server. Removing a server the index
// does not hold is not an error.
func (ix *Index) Remove(server string) error {
	if err := checkServer(server); err != nil {
		return err
	}
	return ix.replace(server, nil)
}

func checkServer(server string) error {
	if server == "" || strings.Contains(server, ":") {
		return fmt.Errorf("invalid server name %q: want a non-empty name without ':'", server)
	}
	return nil
}

// replace swaps server's documents for docs in a single batch.
func (ix *Index) replace(server string, docs map[string]map[string]any) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return ErrClosed
	}
	changed := false
	defer func() { // after statsMu is released, before mu is
		if changed {
			ix.vocabularyChanged()
		}
	}()

	old, err := ix.serverDocIDs(server)
	if err != nil {
		return fmt.Errorf("listing documents of %q: %w", server, err)
	}
	batch := ix.bleve.NewBatch()
	for _, id := range old {
		if _, keep := docs[id]; !keep {
			batch.Delete(id)
		}
	}
	// One server token per document: the server filter of a mention
	// search needs the field's statistics too.
	st := serverStats{Docs: len(docs), Tokens: map[string]int{fieldServer: len(docs)}, ToolTerms: map[string][]string{}}
	terms := map[string]bool{}
	for id, doc := range docs {
		_, name, _ := config.SplitToolID(id)
		own := map[string]bool{}
		for _, f := range textFields {
			toks := ix.analyzer.Analyze([]byte(doc[f].(string)))
			st.Tokens[f] += len(toks)
			if f == fieldAll {
				for _, tok := range toks {
					terms[string(tok.Term)] = true
					own[string(tok.Term)] = true
				}
				if ix.lex != nil {
					// The synonym field is derived from the analyzed
					// combined text, already at hand.
					syn := ix.lex.synText(toks)
					doc[fieldSyn] = syn
					st.Tokens[fieldSyn] += len(strings.Fields(syn))
				}
			}
		}
		if err := batch.Index(id, doc); err != nil {
			return fmt.Errorf("indexing %q: %w", id, err)
		}
		st.Tools = append(st.Tools, name)
		st.ToolTerms[name] = slices.Sorted(maps.Keys(own))
		if deprecated(doc[fieldDescription].(string)) {
			st.Deprecated = append(st.Deprecated, name)
		}
	}
	st.Terms = slices.Sorted(maps.Keys(terms))
	slices.Sort(st.Tools)
	slices.Sort(st.Deprecated)
	if batch.Size() == 0 {
		return nil
	}
	if len(docs) == 0 {
		batch.DeleteInternal(statsKey(server))
	} else {
		raw, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("encoding statistics: %w", err)
		}
		batch.SetInternal(statsKey(server), raw)
	}
	bm25 := adjust(ix.bm25, ix.stats[server], st)

	ix.statsMu.Lock()
	defer ix.statsMu.Unlock()
	if err := ix.bleve.Batch(batch); err != nil {
		return fmt.Errorf("writing documents of %q: %w", server, err)
	}
	prev, hadPrev := ix.stats[server]
	if len(docs) == 0 {
		delete(ix.stats, server)
	} else {
		ix.stats[server] = st
	}
	ix.lookup.update(server, prev, st, hadPrev)
	ix.bm25 = bm25
	changed = true
	return nil
}

// adjust returns t with one server's statistics old replaced by new.
func adjust(t *search.BM25Stats, old, new serverStats) *search.BM25Stats {
	out := &search.BM25Stats{DocCount: t.DocCount - float64(old.Docs) + float64(new.Docs), FieldCardinality: map[string]int{}}
	for f, n := range t.FieldCardinality {
		out.FieldCardinality[f] = n - old.Tokens[f] + new.Tokens[f]
	}
	return out
}

// serverDocIDs returns the ids of every document of server.
func (ix *Index) serverDocIDs(server string) ([]string, error) {
	total, err := ix.bleve.DocCount()
	if err != nil || total == 0 {
		return nil, err
	}
	q := query.NewTermQuery(server)
	q.SetField(fieldServer)
	req := bleve.NewSearchRequestOptions(q, int(total), 0, false)
	req.Score = "none"
	// Statistics, though unused without scoring, spare Bleve from walking
	// the field's whole term dictionary to compute its own.
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: &search.BM25Stats{
		DocCount: float64(total), FieldCardinality: map[string]int{fieldServer: int(total)},
	}}
	res, err := ix.bleve.Search(req)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// document is what the index stores for one tool.
func document(t config.ToolMetadata, withParams bool) map[string]any {
	params := ""
	if withParams {
		params = paramsText(t.ParamsJSON)
	}
	return map[string]any{
		fieldServer:      t.ServerName,
		fieldName:        t.Name,
		fieldDescription: t.Description,
		fieldParams:      params,
		fieldAll:         strings.Join([]string{t.ServerName, t.Name, t.Description, params}, "\n"),
	}
}

// Search returns up to limit tools matching query, best first; equal scores
// are ordered by ID so the answer is deterministic, and the answer at one
// limit is the start of the answer at any larger one (the production
// features keep this exactly; the server prior, an ablation lever, looks
// priorDepth hits further). A query that yields no searchable words (only
// stop words, say) matches nothing.
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
	f := ix.features
	var extra []WeightedTerm
	if ix.expander != nil && f.ExpansionWeight > 0 && len(terms) > 0 {
		extra = ix.expandFunc()(terms, func(t string) bool { return ix.lookup.vocab[t] > 0 })
	}
	var mentioned, quoted []string
	if f.ServerMention && f.ServerMentionWeight > 0 {
		mentioned = mentionedServers(q, ix.lookup.serverKeys)
	}
	if f.ExactName {
		quoted = quotedTools(q, ix.lookup.names, ix.lookup.ids)
	}
	var syns, groups map[string][]string
	if ix.lex != nil && f.SynonymWeight > 0 {
		inIndex := func(t string) bool { return ix.lookup.vocab[t] > 0 }
		syns = ix.lex.others.of(terms, inIndex)
		groups = ix.lex.groupsOf(terms, inIndex)
	}
	bq := ix.plan.build(terms, groups, f.SynonymWeight, syns, extra, f.ExpansionWeight, f.ExpansionGrouped)
	if bq == nil && len(quoted) == 0 {
		return nil, nil
	}

	scores := map[string]float64{}
	best := 0.0
	if bq != nil {
		depth := limit + len(quoted)
		if f.ServerPrior > 0 {
			depth += priorDepth
		}
		if f.DeprecatedWeight < 1 {
			// Each deprecated tool demoted out of the first limit lets
			// one more tool in.
			depth += ix.lookup.deprecated
		}
		res, err := ix.search(ctx, bq, depth)
		if err != nil {
			return nil, fmt.Errorf("searching %q: %w", q, err)
		}
		for _, h := range res.Hits {
			scores[h.ID] = h.Score
			best = max(best, h.Score)
		}
	}
	for _, server := range mentioned {
		if bq == nil {
			break
		}
		// The named server's own matches, however far down the full
		// ranking they are, each lifted by a share of the best score. One
		// search per server: with Bleve 2.6.3, a filter on a disjunction
		// of several servers fails in on-disk indexes ("field stat for
		// bm25 not present *").
		tq := query.NewTermQuery(server)
		tq.SetField(fieldServer)
		within := query.NewBooleanQuery([]query.Query{bq}, nil, nil)
		within.AddFilter(tq)
		// Each deprecated tool demoted out of the first limit lets one
		// more of the server's tools in, as above.
		res, err := ix.search(ctx, within, min(ix.stats[server].Docs, limit+len(quoted)+ix.lookup.deprecated))
		if err != nil {
			return nil, fmt.Errorf("searching %q: %w", q, err)
		}
		for _, h := range res.Hits {
			scores[h.ID] = h.Score + f.ServerMentionWeight*best
		}
	}
	idf := ix.lookup.idf(terms)
	if f.ServerPrior > 0 {
		for id, sc := range scores {
			server, _, _ := config.SplitToolID(id)
			scores[id] = sc + f.ServerPrior*best*coverage(terms, idf, syns, ix.stats[server].Terms)
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
	for i, id := range quoted {
		// Quoted tools lead, in the order the query names them.
		scores[id] = top + 1 + float64(len(quoted)-i)
	}

	hits := make([]Hit, 0, len(scores))
	for id, sc := range scores {
		server, name, _ := config.SplitToolID(id)
		hits = append(hits, Hit{ID: id, Server: server, Name: name, Score: sc,
			Coverage: coverage(terms, idf, syns, ix.stats[server].ToolTerms[name])})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// expandFunc returns the expansion function for the current vocabulary.
// The background builder (buildExpanders) usually has it ready; when a
// search comes first, the search builds it. The caller holds statsMu for
// reading.
func (ix *Index) expandFunc() ExpandFunc {
	ix.expMu.Lock()
	defer ix.expMu.Unlock()
	if ix.expand == nil || ix.expVersion != ix.lookup.version {
		ix.installExpand(ix.lookup.version, ix.lookup.vocabulary(), nil)
	}
	return ix.expand
}

// installExpand makes fn (nil: a new one built from vocab) the expansion
// function of vocabulary version, unless a newer one is installed. An
// unchanged vocabulary keeps the function it has, and with it whatever
// that function has cached. The caller holds expMu.
func (ix *Index) installExpand(version int, vocab []string, fn ExpandFunc) {
	if ix.expand != nil && version <= ix.expVersion {
		return
	}
	if ix.expand != nil && slices.Equal(vocab, ix.expVocab) {
		ix.expVersion = version
		return
	}
	if fn == nil {
		fn = ix.newExpandFunc(vocab)
	}
	ix.expand, ix.expVersion, ix.expVocab = fn, version, vocab
}

// newExpandFunc calls Options.Expander, never returning nil. An Expander
// that panics is logged and replaced by no expansion for this vocabulary,
// whether a search or the background builder called it.
func (ix *Index) newExpandFunc(vocab []string) (fn ExpandFunc) {
	none := func([]string, func(string) bool) []WeightedTerm { return nil }
	defer func() {
		if p := recover(); p != nil {
			ix.log.Error("query expansion panicked while building; searching without it until the tools change",
				zap.Any("panic", p), zap.Stack("stack"))
			fn = none
		}
	}()
	if fn := ix.expander(vocab); fn != nil {
		return fn
	}
	return none
}

// vocabularyChanged starts building the expansion function of the new
// vocabulary in the background, so the next search does not pay for it
// (tens of milliseconds at 10,000 tools). Writes do not wait for it:
// Upsert, called once per server at start-up, stays as fast as without
// expansion, and a burst of them costs one build per change the builder
// sees, not one per Upsert. The caller holds mu for reading, so Close
// cannot start waiting for the builder before it is counted.
func (ix *Index) vocabularyChanged() {
	if ix.expander == nil {
		return
	}
	ix.expMu.Lock()
	defer ix.expMu.Unlock()
	ix.expDirty = true
	if ix.expBuilding {
		return // the running builder looks again before it stops
	}
	ix.expBuilding = true
	ix.expWG.Add(1)
	go ix.buildExpanders()
}

// buildExpanders builds expansion functions until it has built one for the
// latest vocabulary. It never holds expMu and statsMu together, and holds
// neither while building. The only code it runs that is not this
// package's, the Expander, is recovered (and logged) in newExpandFunc.
func (ix *Index) buildExpanders() {
	defer ix.expWG.Done()
	for {
		ix.expMu.Lock()
		if !ix.expDirty {
			ix.expBuilding = false
			ix.expMu.Unlock()
			return
		}
		ix.expDirty = false
		ix.expMu.Unlock()

		ix.statsMu.RLock()
		version, vocab := ix.lookup.version, ix.lookup.vocabulary()
		ix.statsMu.RUnlock()

		ix.expMu.Lock()
		stale := ix.expand == nil || version > ix.expVersion
		same := ix.expand != nil && slices.Equal(vocab, ix.expVocab)
		ix.expMu.Unlock()
		var fn ExpandFunc
		if stale && !same {
			fn = ix.newExpandFunc(vocab)
		}
		ix.expMu.Lock()
		ix.installExpand(version, vocab, fn)
		ix.expMu.Unlock()
	}
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
// a term counting as found when have holds it or one of its synonyms syns[t].
func coverage(terms []string, idf []float64, syns map[string][]string, have []string) float64 {
	holds := func(t string) bool {
		_, ok := slices.BinarySearch(have, t)
		return ok
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

// search runs q with BM25 statistics that match the index exactly. Equal
// scores are cut by id, as Search orders them, so that the first limit hits
// are the start of the ranking at any larger limit (Bleve's own order among
// equals is its internal one). The caller holds statsMu for reading.
func (ix *Index) search(ctx context.Context, q query.Query, limit int) (*bleve.SearchResult, error) {
	req := bleve.NewSearchRequestOptions(q, limit, 0, false)
	req.SortBy([]string{"-_score", "_id"})
	req.PreSearchData = map[string]any{search.BM25PreSearchDataKey: ix.bm25}
	return ix.bleve.SearchInContext(ctx, req)
}

// Vocabulary returns the distinct analyzed terms the index holds, sorted:
// what query expansion may add.
func (ix *Index) Vocabulary() []string {
	ix.statsMu.RLock()
	defer ix.statsMu.RUnlock()
	return ix.lookup.vocabulary()
}

func (l *lookup) vocabulary() []string {
	out := make([]string, 0, len(l.vocab))
	for t := range l.vocab {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
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

// Count returns the number of tools in the index.
func (ix *Index) Count() (int, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return 0, ErrClosed
	}
	n, err := ix.bleve.DocCount()
	if err != nil {
		return 0, fmt.Errorf("counting documents: %w", err)
	}
	return int(n), nil
}

// Close releases the index; an in-memory index is discarded. It waits for
// running searches and writes. Calling it again returns nil.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return nil
	}
	ix.closed = true
	ix.expWG.Wait() // no write can start another builder now
	if err := ix.bleve.Close(); err != nil {
		return fmt.Errorf("closing index: %w", err)
	}
	return nil
}

// deprecatedMarker matches the ways tool descriptions say a tool is
// deprecated: a description that opens with the word, the word in capitals
// anywhere ("... DEPRECATED: Use read_text_file instead."), or a sentence
// that points to the replacement. A description about deprecation ("Check
// if packages are deprecated") matches none of them.
var deprecatedMarker = regexp.MustCompile(`^[\s\[(*_⚠️!]*(?i:deprecated)\b|\bDEPRECATED\b|(?i:\bdeprecated\s*[:.,;-]\s*(please\s+)?use\b|\bdeprecated\s+in\s+favou?r\s+of\b|\b(this|the)\s+(tool|function|endpoint|method|command)\s+is\s+deprecated\b)`)

// deprecated reports whether a tool description marks the tool deprecated.
func deprecated(description string) bool {
	return deprecatedMarker.MatchString(description)
}
