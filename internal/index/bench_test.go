package index

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// Benchmarks, run with
//
//	go test -run '^$' -bench Search -benchtime 200x ./internal/index
//	go test -run '^$' -bench Build -benchtime 2x ./internal/index
//
// Each compares Search (or building by per-server Upsert) with a baseline
// measured in the same run, "bleve-match": the same documents in one plain
// Bleve batch in a merged Scorch index, searched with a single match query
// on the combined field and default scoring. That is the floor Bleve itself
// sets; the ratio is what our query shape, BM25 statistics and ordering
// cost. Search benchmarks also report their 99th percentile latency.

// benchQueries are the LiveMCPTool query texts, both halves: latency does
// not depend on relevance labels.
func benchQueries(b *testing.B) []string {
	b.Helper()
	return testenv.QueryTexts(b, "livemcptool.queries.json")
}

func BenchmarkSearch(b *testing.B) {
	base := liveMCPTools(b)
	queries := benchQueries(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"tools=527", 527}, {"tools=10000", 10000}} {
		tools := synthesize(base, size.n)
		mem := newIndex(b, Options{})
		load(b, mem, tools)
		disk := newIndex(b, Options{Dir: b.TempDir()})
		load(b, disk, tools)
		baseline := baselineIndex(b, tools)

		b.Run(size.name+"/disk", func(b *testing.B) {
			runSearches(b, queries, func(ctx context.Context, q string) error {
				_, err := disk.Search(ctx, q, 5)
				return err
			})
		})
		b.Run(size.name+"/memory", func(b *testing.B) {
			runSearches(b, queries, func(ctx context.Context, q string) error {
				_, err := mem.Search(ctx, q, 5)
				return err
			})
		})
		b.Run(size.name+"/bleve-match", func(b *testing.B) {
			runSearches(b, queries, func(ctx context.Context, q string) error {
				mq := query.NewMatchQuery(q)
				mq.SetField(fieldAll)
				_, err := baseline.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, 5, 0, false))
				return err
			})
		})
	}
}

func runSearches(b *testing.B, queries []string, search func(context.Context, string) error) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := search(ctx, queries[i%len(queries)]); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds()), "p99-µs")
}

// baselineIndex indexes tools in one batch into a default-scoring Scorch
// index and closes it when the benchmark ends.
func baselineIndex(b *testing.B, tools []config.ToolMetadata) bleve.Index {
	b.Helper()
	m, err := newMapping(DefaultFeatures())
	if err != nil {
		b.Fatal(err)
	}
	m.ScoringModel = ""
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = idx.Close() })
	batch := idx.NewBatch()
	for _, t := range tools {
		if err := batch.Index(t.ID(), document(t, DefaultFeatures(), nil)); err != nil {
			b.Fatal(err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		b.Fatal(err)
	}
	return idx
}

// BenchmarkBuild measures building the whole index of 10,000 tools, one
// Upsert per server (1,330 servers) as the proxy does at start-up, against
// indexing the same documents in one plain batch ("bleve-batch").
func BenchmarkBuild(b *testing.B) {
	tools := synthesize(liveMCPTools(b), 10000)
	build := func(b *testing.B, dir func() string) {
		for i := 0; i < b.N; i++ {
			ix, err := New(Options{Dir: dir()})
			if err != nil {
				b.Fatal(err)
			}
			load(b, ix, tools)
			if err := ix.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("tools=10000/memory", func(b *testing.B) { build(b, func() string { return "" }) })
	b.Run("tools=10000/disk", func(b *testing.B) { build(b, b.TempDir) })
	b.Run("tools=10000/bleve-batch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			baselineIndex(b, tools)
		}
	})
}
