package index

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Benchmarks. Compare Search with the baseline sub-benchmark of the same
// run ("bleve-match"): one plain Bleve match query on the combined field of
// a default-scoring index, i.e. what the index costs without our query
// shape, BM25 statistics and sorting. Search sub-benchmarks also report the
// 99th percentile latency of their runs.
//
//	go test -run '^$' -bench Search -benchtime 2000x ./internal/index
//	go test -run '^$' -bench Build -benchtime 3x ./internal/index

// benchQueries are the LiveMCPTool query texts, both halves: latency does
// not depend on relevance labels.
func benchQueries(b *testing.B) []string {
	b.Helper()
	var queries []string
	for _, q := range loadQueries(b, "livemcptool.queries.json").Queries {
		queries = append(queries, q.Query)
	}
	return queries
}

func BenchmarkSearch(b *testing.B) {
	base := liveMCPTools(b)
	queries := benchQueries(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"tools=527", 527}, {"tools=10000", 10000}} {
		tools := synthesize(base, size.n)
		ix := newIndex(b, Options{})
		load(b, ix, tools)

		b.Run(size.name+"/search", func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := ix.Search(ctx, queries[i%len(queries)], 5); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportP99(b, lat)
		})

		b.Run(size.name+"/bleve-match", func(b *testing.B) {
			m, err := newMapping()
			if err != nil {
				b.Fatal(err)
			}
			m.ScoringModel = ""
			idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer idx.Close()
			batch := idx.NewBatch()
			for _, t := range tools {
				if err := batch.Index(t.ID(), document(t)); err != nil {
					b.Fatal(err)
				}
			}
			if err := idx.Batch(batch); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				q := query.NewMatchQuery(queries[i%len(queries)])
				q.SetField(fieldAll)
				if _, err := idx.SearchInContext(ctx, bleve.NewSearchRequestOptions(q, 5, 0, false)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportP99(b, lat)
		})
	}
}

func reportP99(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds()), "p99-µs")
}

// BenchmarkBuild measures building the whole index, one Upsert per server
// as the proxy does at start-up. The baseline ("bleve-batch") indexes the
// same documents in one plain Bleve batch without our statistics.
func BenchmarkBuild(b *testing.B) {
	tools := synthesize(liveMCPTools(b), 10000)
	b.Run("tools=10000/upsert", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ix, err := New(Options{})
			if err != nil {
				b.Fatal(err)
			}
			load(b, ix, tools)
			if err := ix.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tools=10000/bleve-batch", func(b *testing.B) {
		m, err := newMapping()
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
			if err != nil {
				b.Fatal(err)
			}
			batch := idx.NewBatch()
			for _, t := range tools {
				if err := batch.Index(t.ID(), document(t)); err != nil {
					b.Fatal(err)
				}
			}
			if err := idx.Batch(batch); err != nil {
				b.Fatal(err)
			}
			if err := idx.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
