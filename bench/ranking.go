package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/retrieval"
)

// rankingSetup is how a measurement ranks: the production pipeline
// (internal/retrieval) over an in-memory index with these options and,
// for the dense rows, the embeddings provider. Every measurement of the
// profiler ranks through it, and so does the MCP front of the discovery
// measurement: the figures are the ranking mcproxy serves.
type rankingSetup struct {
	index index.Options
	// dense, when set, adds dense retrieval as mcproxy adds it with an
	// embeddings section in config.json.
	dense *DenseSetup
	// denseOnly ranks by embedding similarity alone (an ablation row).
	denseOnly bool
}

// pipeline builds an empty pipeline for s.
func (s rankingSetup) pipeline() (*retrieval.Pipeline, error) {
	if s.index.Dir != "" {
		return nil, errors.New("profiler indexes live in memory: Options.Dir must be empty")
	}
	ix, err := index.New(s.index)
	if err != nil {
		return nil, fmt.Errorf("creating index: %w", err)
	}
	var dense *embed.Dense
	if s.dense != nil {
		if dense, err = embed.FromConfig(s.dense.Config, nil); err != nil {
			ix.Close()
			return nil, err
		}
	}
	p, err := retrieval.New(ix, dense, retrieval.Options{DenseOnly: s.denseOnly})
	if err != nil {
		dense.Close()
		ix.Close()
		return nil, err
	}
	return p, nil
}

// ingest feeds p each tool's metadata under arm a, one Upsert per server in
// name order as the proxy does, and waits for every tool's vector when p
// has dense retrieval. Tools whose metadata a cannot produce are left out
// and returned as skips.
func ingest(ctx context.Context, p *retrieval.Pipeline, a arms.Arm, tools []config.Tool) ([]SkippedTool, error) {
	byServer := map[string][]config.ToolMetadata{}
	var servers []string
	var skipped []SkippedTool
	for _, t := range tools {
		m, err := a.EncodeIndexMetadata(t)
		if err != nil {
			skipped = append(skipped, SkippedTool{ToolID: t.ID, Reason: err.Error()})
			continue
		}
		if _, ok := byServer[t.Server]; !ok {
			servers = append(servers, t.Server)
		}
		byServer[t.Server] = append(byServer[t.Server], m)
	}
	sort.Strings(servers)
	for _, s := range servers {
		if err := p.Upsert(s, byServer[s]); err != nil {
			return nil, fmt.Errorf("indexing server %s: %w", s, err)
		}
	}
	if err := p.Sync(ctx); err != nil {
		return nil, fmt.Errorf("embedding the tools: %w", err)
	}
	return skipped, nil
}

// rankAll ranks every query at limit: the ids, best first. A query whose
// dense ranking failed fails the measurement rather than falling back to
// BM25 as a live search would, which would report BM25's figures as dense
// ones.
func rankAll(ctx context.Context, p *retrieval.Pipeline, queries []Query, limit int) ([][]string, error) {
	rankings := make([][]string, len(queries))
	for i, q := range queries {
		r, err := p.Search(ctx, q.Query, limit)
		if err == nil && r.DenseErr != nil {
			err = fmt.Errorf("embedding the query: %w", r.DenseErr)
		}
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		rankings[i] = make([]string, len(r.Hits))
		for j, h := range r.Hits {
			rankings[i][j] = h.ID
		}
	}
	return rankings, nil
}
