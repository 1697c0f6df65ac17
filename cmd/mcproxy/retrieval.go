package main

import (
	"errors"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/expand"
	"github.com/mcproxy/mcproxy/internal/index"
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
