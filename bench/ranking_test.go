package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
)

// toolLine finds the tools compact_sig lists: each block opens a line with
// the tool's id (server names may hold spaces) and its signature.
var toolLine = regexp.MustCompile(`(?m)^([^(\n]+)\(`)

// TestRankingIsRetrieveTools proves that the profiler measures the ranking
// mcproxy serves: for every graded LiveMCPTool query, the ranking the
// profiler scores (rankAll over its pipeline, the whole corpus deep) starts
// with exactly the tools retrieve_tools answers through the real MCP front
// (ServerFront, as the discovery measurement reaches it) at each discovery
// limit and at the largest limit, with BM25 alone and with dense retrieval
// through our loopback embeddings server (the ablation's +dense row).
func TestRankingIsRetrieveTools(t *testing.T) {
	ctx := context.Background()
	c, err := LoadCorpus(filepath.Join(testDatasets(t), LiveMCPToolFile), "livemcptool")
	if err != nil {
		t.Fatal(err)
	}
	sets, err := AttachQuerySets([]*Corpus{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	queries := sets["livemcptool"].Set.Queries
	if len(queries) < 100 {
		t.Fatalf("got %d LiveMCPTool queries, want the graded set", len(queries))
	}
	a, err := arms.Resolve(config.DefaultArm)
	if err != nil {
		t.Fatal(err)
	}

	srv := embedtest.New(embedtest.Options{Model: "toy-embed"})
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name  string
		setup rankingSetup
	}{
		{"bm25", rankingSetup{}},
		{"dense", rankingSetup{dense: denseSetup(t, srv.URL)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.setup.pipeline()
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, err := ingest(ctx, p, a, c.Tools); err != nil {
				t.Fatal(err)
			}
			measured, err := rankAll(ctx, p, queries, len(c.Tools))
			if err != nil {
				t.Fatal(err)
			}

			rank, err := tc.setup.pipeline()
			if err != nil {
				t.Fatal(err)
			}
			f, err := ServerFront(ctx, a, c.Tools, rank, FrontOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			before := srv.Requests()
			for i, q := range queries {
				for _, limit := range append(DiscoveryLimits, 50) {
					text, err := f.Retrieve(ctx, q.Query, limit)
					if err != nil {
						t.Fatal(err)
					}
					served := []string{}
					for _, m := range toolLine.FindAllStringSubmatch(text, -1) {
						if c.IDs()[m[1]] {
							served = append(served, m[1])
						}
					}
					want := measured[i][:min(limit, len(measured[i]))]
					if diff := cmp.Diff(want, served); diff != "" {
						t.Fatalf("query %s %q at limit %d: retrieve_tools differs from the profiler's ranking (-profiler +retrieve_tools):\n%s", q.ID, q.Query, limit, diff)
					}
				}
			}
			if tc.setup.dense != nil && srv.Requests() == before {
				t.Error("retrieve_tools never asked the embeddings server: the front ranked without dense retrieval")
			}
		})
	}
}

// denseSetup is a config whose embeddings section names the provider at
// url, with its vector cache in a temporary data_dir.
func denseSetup(t *testing.T, url string) *DenseSetup {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	body, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   t.TempDir(),
		"embeddings": map[string]any{"url": url, "model": "toy-embed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s, why := DenseFrom(cfg, path)
	if s == nil {
		t.Fatal(why)
	}
	return s
}
