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
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
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
	// Learned, when set, gives a tool's learned words (by tool id): query
	// words that led the agent to the tool, already analyzed, each
	// repeated by its weight (see package learn). They are indexed in a
	// field of their own and searched like synonyms, below the tool's own
	// words (Features.LearnedWeight). Relearn re-reads them for one tool.
	Learned func(id string) []string
}

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
	learned  func(id string) []string
	// sources holds each server's last upserted tools, so Relearn can
	// rebuild their documents; written only under wmu.
	sources map[string][]config.ToolMetadata
	skipped []string // words of Options.Synonyms that take no part

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

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("index is closed")

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
	ix := &Index{mapping: m, analyzer: a, plan: queryPlan{fields: f.Fields}, features: f, expander: opts.Expander, log: log, expVersion: -1,
		stats: map[string]serverStats{}, learned: opts.Learned, sources: map[string][]config.ToolMetadata{}}
	content := fmt.Sprintf("params=%v", f.Params)
	if f.ParamDescriptions != "" && f.ParamDescriptions != ParamDescriptionsEverywhere {
		content += " param-descriptions=" + f.ParamDescriptions
	}
	if f.SkipSiblingNames {
		content += " skip-sibling-names"
	}
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
