package main

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/expand"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/server"
)

// indexExpander loads the word embeddings `mcproxy embeddings build` wrote
// under dataDir for query expansion. Expansion is optional: without the
// file (or with a damaged one) search runs on the query's own words, and
// the log says how to turn it on.
func indexExpander(dataDir string, log *zap.Logger) func([]string) index.ExpandFunc {
	if dataDir == "" {
		return nil
	}
	path := expand.DefaultPath(dataDir)
	v, err := expand.Load(path)
	switch {
	case errors.Is(err, expand.ErrNotBuilt):
		log.Info("query expansion off: run `mcproxy embeddings build` to turn it on", zap.String("path", path))
		return nil
	case err != nil:
		log.Warn("query expansion off: cannot load the embeddings; rebuild them with `mcproxy embeddings build`", zap.Error(err))
		return nil
	}
	log.Info("query expansion on", zap.String("path", path))
	return expand.ForIndex(v, expand.Options{})
}

// searchIndex adapts the index, and dense retrieval when configured, to
// server.Index: tools go to both; a search fuses the BM25 ranking with the
// dense one (embed.Dense.Hybrid), and falls back to BM25 alone whenever
// the embeddings provider cannot answer.
type searchIndex struct {
	ix    *index.Index
	dense *embed.Dense // nil = lexical only
}

func (x searchIndex) Upsert(server string, tools []config.ToolMetadata) error {
	if err := x.ix.Upsert(server, tools); err != nil {
		return err
	}
	// Embedding happens in the background; a refusal here (a closed Dense)
	// leaves lexical search complete.
	_ = x.dense.Upsert(server, tools)
	return nil
}

func (x searchIndex) Remove(server string) error {
	x.dense.Remove(server)
	return x.ix.Remove(server)
}

func (x searchIndex) Search(ctx context.Context, query string, limit int) ([]server.Hit, error) {
	hits, err := x.ix.Search(ctx, query, max(limit, x.dense.Depth()))
	if err != nil {
		return nil, err
	}
	// Weak describes the query's wording against the tools; with dense
	// retrieval it is judged on the lexical ranking, as dense-only hits
	// carry no coverage.
	weak := len(hits) == 0 || hits[0].Weak()
	if x.dense != nil {
		hits = x.dense.Hybrid(ctx, query, hits, limit)
	} else if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]server.Hit, len(hits))
	for i, h := range hits {
		out[i] = server.Hit{ID: h.ID, Server: h.Server, Name: h.Name, Score: h.Score, Weak: h.Weak()}
		if x.dense != nil {
			out[i].Weak = weak
		}
	}
	return out, nil
}
