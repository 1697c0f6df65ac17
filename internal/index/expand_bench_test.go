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
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// BenchmarkSearchExpansion measures Search with and without query expansion
// (static word embeddings, internal/expand) at 527 and 10,000 tools, on
// disk and in memory: "bare" (no synonym lexicon, no expansion) is the
// baseline of the same run, "plain" the production index without an
// embeddings file, "expansion" the production index with one. Run with
//
//	go test -run '^$' -bench SearchExpansion -benchtime 2000x ./internal/index
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
				for _, mode := range []string{"bare", "plain", "expansion"} {
					opts := index.Options{}
					if store == "disk" {
						opts.Dir = b.TempDir()
					}
					if mode == "bare" {
						// Neither the synonym lexicon nor expansion: the
						// baseline both are measured against.
						f := index.DefaultFeatures()
						f.Synonyms = false
						opts.Features = &f
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
					// The expander for the new vocabulary is built in the
					// background after the last Upsert; the first search
					// after it is done is reported apart (first-µs).
					index.WaitExpanderForTest(ix)
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

// BenchmarkBuildExpansion measures loading 10,000 tools by per-server
// Upsert (1,330 servers, as at start-up) into an in-memory index with query
// expansion on, the expander built in the background after each change and
// waited for at the end, against the same load without expansion
// ("plain", the baseline of the same run).
func BenchmarkBuildExpansion(b *testing.B) {
	v := vectors(b)
	tools := index.SynthesizeForTest(index.LiveMCPToolsForTest(b), 10000)
	for _, mode := range []string{"plain", "expansion"} {
		b.Run("tools=10000/memory/"+mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				opts := index.Options{}
				if mode == "expansion" {
					opts.Expander = expand.ForIndex(v, expand.Options{})
				}
				ix, err := index.New(opts)
				if err != nil {
					b.Fatal(err)
				}
				index.LoadForTest(b, ix, tools)
				index.WaitExpanderForTest(ix)
				if err := ix.Close(); err != nil {
					b.Fatal(err)
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
			// The same word list `mcproxy embeddings build` converts.
			src := testenv.NodePackage(b, expand.SourcePackage, "")
			opts := expand.ConvertOptions{MaxWords: expand.DefaultMaxWords}
			if _, err := expand.Build(context.Background(), src, path, opts); err != nil {
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
