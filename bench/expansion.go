package bench

import (
	"errors"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/expand"
	"github.com/mcproxy/mcproxy/internal/index"
)

// loadExpansion returns the index expander for the word-embeddings file at
// path ("" = the default location, "none" = off), or why there is none. A
// missing default file is not an error: expansion is optional, as in
// mcproxy itself, and the report says it was off. A file named explicitly
// must load.
func loadExpansion(path string) (func([]string) index.ExpandFunc, string, error) {
	explicit := path != ""
	switch path {
	case "none":
		return nil, "turned off with --expansion none", nil
	case "":
		path = expand.DefaultPath(config.ExpandHome(config.DefaultDataDir))
	}
	v, err := expand.Load(path)
	switch {
	case err == nil:
		return expand.ForIndex(v, expand.Options{}), "", nil
	case errors.Is(err, expand.ErrNotBuilt) && !explicit:
		return nil, "no embeddings file (run `mcproxy embeddings build`, or pass --expansion FILE)", nil
	default:
		return nil, "", fmt.Errorf("--expansion: %w", err)
	}
}
