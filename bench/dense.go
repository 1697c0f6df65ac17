package bench

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/config"
)

// DenseSetup is the embeddings provider the ablation's dense rows use: an
// mcproxy config (defaults applied) whose "embeddings" section is on. Its
// dense retrieval is built as mcproxy builds it (embed.FromConfig), vectors
// cached under its data_dir.
type DenseSetup struct {
	Config *config.Config
}

// DenseFrom returns the DenseSetup of cfg, the config loaded from --config
// (nil when none was given), or why the dense rows cannot be measured.
func DenseFrom(cfg *config.Config, path string) (*DenseSetup, string) {
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
	// fused with the dense one (internal/retrieval).
	denseFused denseMode = iota + 1
	// denseOnly ranks by embedding similarity alone.
	denseOnly
)
