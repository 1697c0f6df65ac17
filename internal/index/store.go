package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	bolterrors "go.etcd.io/bbolt/errors"
)

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
	// Learned holds each tool's distinct learned terms (Options.Learned),
	// sorted, by name; only tools that have some.
	Learned map[string][]string `json:"learned,omitempty"`
}

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
	if errors.Is(err, bolterrors.ErrTimeout) {
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
	t.FieldCardinality[fieldLearned] = 0
	for _, s := range stats {
		t.DocCount += float64(s.Docs)
		for f, n := range s.Tokens {
			t.FieldCardinality[f] += n
		}
	}
	return withLearned(t, stats)
}

// adjust returns t with one server's statistics old replaced by new.
func adjust(t *search.BM25Stats, old, new serverStats) *search.BM25Stats {
	out := &search.BM25Stats{DocCount: t.DocCount - float64(old.Docs) + float64(new.Docs), FieldCardinality: map[string]int{}}
	for f, n := range t.FieldCardinality {
		out.FieldCardinality[f] = n - old.Tokens[f] + new.Tokens[f]
	}
	return out
}

// withLearned sets the learned field's cardinality in t so that its average
// length is the average over the tools that have learned words: few tools
// have any, and averaged over all of them the length would be near zero,
// which BM25 would take to mean every learned field is very long.
func withLearned(t *search.BM25Stats, stats map[string]serverStats) *search.BM25Stats {
	docs, toks := 0, 0
	for _, s := range stats {
		docs += len(s.Learned)
		toks += s.Tokens[fieldLearned]
	}
	if docs > 0 {
		t.FieldCardinality[fieldLearned] = int(math.Round(float64(toks) / float64(docs) * t.DocCount))
	}
	return t
}
