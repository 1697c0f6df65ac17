package main

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
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
	fn, notBuilt, err := loadExpander(path)
	switch {
	case notBuilt:
		log.Info("query expansion off: run `mcproxy embeddings build` to turn it on", zap.String("path", path))
		return nil
	case err != nil:
		log.Warn("query expansion off: cannot load the embeddings; rebuild them with `mcproxy embeddings build`", zap.Error(err))
		return nil
	}
	log.Info("query expansion on", zap.String("path", path))
	return fn
}

// loadExpander loads the word-embeddings file at path as the index's
// expander; notBuilt reports a file that does not exist (expansion is
// optional, so the callers decide whether that is an error).
func loadExpander(path string) (fn func([]string) index.ExpandFunc, notBuilt bool, err error) {
	v, err := expand.Load(path)
	if err != nil {
		return nil, errors.Is(err, expand.ErrNotBuilt), err
	}
	return expand.ForIndex(v, expand.Options{}), false, nil
}

// loadExpansion is `mcproxy bench --expansion`: the index expander for the
// word-embeddings file at path ("" = the default location, "none" = off),
// or why there is none. A missing default file is not an error: expansion
// is optional, as in mcproxy itself, and the report says it was off. A file
// named explicitly must load.
func loadExpansion(path string) (func([]string) index.ExpandFunc, string, error) {
	explicit := path != ""
	switch path {
	case "none":
		return nil, "turned off with --expansion none", nil
	case "":
		path = expand.DefaultPath(config.ExpandHome(config.DefaultDataDir))
	}
	fn, notBuilt, err := loadExpander(path)
	switch {
	case err == nil:
		return fn, "", nil
	case notBuilt && !explicit:
		return nil, "no embeddings file (run `mcproxy embeddings build`, or pass --expansion FILE)", nil
	default:
		return nil, "", fmt.Errorf("--expansion: %w", err)
	}
}
