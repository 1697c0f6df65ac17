package bench

import (
	"context"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/index"
)

// DenseSetup is the embeddings provider the ablation's dense rows use: an
// mcproxy config (defaults applied) whose "embeddings" section is on. Its
// dense retrieval is built as mcproxy builds it (embed.FromConfig), vectors
// cached under its data_dir.
type DenseSetup struct {
	Config *config.Config
}

// denseFrom returns the DenseSetup of cfg, the config loaded from --config
// (nil when none was given), or why the dense rows cannot be measured.
func denseFrom(cfg *config.Config, path string) (*DenseSetup, string) {
	switch {
	case cfg == nil:
		return nil, "needs an embeddings provider: pass --config with a config.json whose \"embeddings\" section names one"
	case !cfg.Embeddings.IsEnabled():
		return nil, fmt.Sprintf("the \"embeddings\" section of %s is off", path)
	}
	return &DenseSetup{Config: cfg}, ""
}

// denseMode says how a dense row ranks.
type denseMode int

const (
	// denseFused is production with dense retrieval on: the BM25 ranking
	// fused with the dense one (embed.Dense.Hybrid).
	denseFused denseMode = iota + 1
	// denseOnly ranks by embedding similarity alone.
	denseOnly
)

// measureDense scores c's queries with dense retrieval through the
// provider of s, in mode. Every tool is embedded before the first query
// (Dense.Sync), and every query must embed: a provider that fails during
// the run fails the measurement (the row says why) instead of falling back
// to BM25 as a live search would, which would report BM25's figures as
// dense ones.
func measureDense(ctx context.Context, a arms.Arm, c *Corpus, qs NamedQuerySet, opts index.Options, s *DenseSetup, mode denseMode) (retrieval, error) {
	d, err := embed.FromConfig(s.Config, nil)
	if err != nil {
		return retrieval{}, err
	}
	defer d.Close()

	ix, skipped, err := buildIndex(a, c.Tools, opts)
	if err != nil {
		return retrieval{}, err
	}
	defer ix.Close()
	byServer := map[string][]config.ToolMetadata{}
	for _, t := range c.Tools {
		m, err := a.EncodeIndexMetadata(t)
		if err != nil {
			continue // buildIndex reported it as skipped
		}
		byServer[t.Server] = append(byServer[t.Server], m)
	}
	for _, server := range c.Servers() {
		if err := d.Upsert(server, byServer[server]); err != nil {
			return retrieval{}, err
		}
	}
	if err := d.Sync(ctx); err != nil {
		return retrieval{}, fmt.Errorf("embedding the tools: %w", err)
	}

	queries := qs.Set.Queries
	rankings := make([][]string, len(queries))
	for i, q := range queries {
		dense, err := d.Search(ctx, q.Query, len(c.Tools))
		if err != nil {
			return retrieval{}, fmt.Errorf("embedding query %s: %w", q.ID, err)
		}
		hits := dense
		if mode == denseFused {
			lexical, err := ix.Search(ctx, q.Query, max(len(c.Tools), d.Depth()))
			if err != nil {
				return retrieval{}, fmt.Errorf("query %s: %w", q.ID, err)
			}
			hits = d.Hybrid(ctx, q.Query, lexical, len(c.Tools))
		}
		rankings[i] = make([]string, len(hits))
		for j, h := range hits {
			rankings[i][j] = h.ID
		}
	}
	r := scoreRankings(queries, rankings)
	r.skipped = skipped
	return r, nil
}
