package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/tokens"
)

// runProfile runs the profiler, as p says, on corpus_v2 of the frozen
// datasets with its query set, the cl100k_base tokenizer and the built-in
// arms, and returns the report and its JSON.
func runProfile(t *testing.T, p Profile) (*Report, []byte) {
	t.Helper()
	c, err := LoadCorpus(filepath.Join(testDatasets(t), CorpusV2File), "corpus_v2")
	if err != nil {
		t.Fatal(err)
	}
	p.Corpora = []*Corpus{c}
	if p.QuerySets, err = AttachQuerySets(p.Corpora, nil); err != nil {
		t.Fatal(err)
	}
	p.Registry = Registry()
	tk, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	p.Counter, p.TokenizerName = tk, tk.Name()
	rep, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return rep, raw
}

func mustWD(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
