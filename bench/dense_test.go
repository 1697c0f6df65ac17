package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/embed/embedtest"
)

// runDenseAblation runs the ablation on corpus_v2 with the embeddings
// provider at url and returns the report and its raw JSON.
func runDenseAblation(t *testing.T, url string) (Report, []byte, string) {
	t.Helper()
	ds := testDatasets(t)
	dataDir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "config.json")
	body, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   dataDir,
		"embeddings": map[string]any{"url": url, "model": "toy-embed"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, body, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, raw := runAblation(t, ds, "--config", cfg)
	return rep, raw, dataDir
}

// runAblation runs the profiler with the ablation on corpus_v2 (baseline
// arm, no fixtures, discovery or expansion) plus extra flags, and returns
// the report and its raw JSON.
func runAblation(t *testing.T, ds string, extra ...string) (Report, []byte) {
	t.Helper()
	return runReport(t, append([]string{"run", "--corpus", "corpus_v2=" + filepath.Join(ds, CorpusV2File), "--arms", "baseline_json",
		"--fixtures", "none", "--no-discovery", "--expansion", "none", "--ablation"}, extra...)...)
}

func ablationRow(t *testing.T, rep Report, variant string) AblationRow {
	t.Helper()
	for _, r := range rep.Ablation {
		if r.Variant == variant {
			return r
		}
	}
	t.Fatalf("no ablation row %q", variant)
	return AblationRow{}
}

// TestAblationDense measures the dense rows against a real HTTP embeddings
// server (our toy model, internal/embed/embedtest): both rows are scored on
// both halves, differ from BM25 alone, are deterministic, and the vectors
// land in the config's data_dir cache.
func TestAblationDense(t *testing.T) {
	srv := embedtest.New(embedtest.Options{Model: "toy-embed"})
	t.Cleanup(srv.Close)
	rep, raw, dataDir := runDenseAblation(t, srv.URL)

	prod := ablationRow(t, rep, "production")
	for _, v := range []string{"+dense", "dense-only"} {
		r := ablationRow(t, rep, v)
		if r.Status != StatusMeasured || r.Quality == nil || len(r.QualityBySplit) != 2 {
			t.Fatalf("%s: got status %q (%s), %d splits; want measured on tune and heldout", v, r.Status, r.UnavailableReason, len(r.QualityBySplit))
		}
		if r.Quality.Queries != prod.Quality.Queries {
			t.Errorf("%s: got %d queries, want %d", v, r.Quality.Queries, prod.Quality.Queries)
		}
		if *r.Quality == *prod.Quality {
			t.Errorf("%s scored exactly like production: dense retrieval did not reach the ranking", v)
		}
		if !strings.Contains(r.Change, "model toy-embed") {
			t.Errorf("%s: change %q does not name the model", v, r.Change)
		}
	}
	if d, f := ablationRow(t, rep, "dense-only"), ablationRow(t, rep, "+dense"); *d.Quality == *f.Quality {
		t.Error("dense-only and +dense scored the same: the fused row did not fuse")
	}
	cached, err := os.ReadDir(filepath.Join(dataDir, "embeddings-cache"))
	if err != nil || len(cached) == 0 {
		t.Errorf("vector cache under data_dir: %d entries, err %v; want the tools' vectors", len(cached), err)
	}

	// Same provider, same vectors (now from the cache): the same report.
	_, again, _ := runDenseAblation(t, srv.URL)
	if !bytes.Equal(dropTimestamp(raw), dropTimestamp(again)) {
		t.Error("report.json differs between two runs with the same provider")
	}
}

// TestAblationDenseProviderFails: a provider answering 500 makes the dense
// rows unavailable with the reason; every other row is still measured.
func TestAblationDenseProviderFails(t *testing.T) {
	srv := embedtest.New(embedtest.Options{})
	t.Cleanup(srv.Close)
	srv.SetFault(embedtest.Status500)
	rep, _, _ := runDenseAblation(t, srv.URL)
	for _, v := range []string{"+dense", "dense-only"} {
		r := ablationRow(t, rep, v)
		if r.Status != StatusUnavailable || !strings.Contains(r.UnavailableReason, "embeddings provider failed") || !strings.Contains(r.UnavailableReason, "500") {
			t.Errorf("%s: got status %q reason %q, want unavailable naming the provider's 500", v, r.Status, r.UnavailableReason)
		}
	}
	if r := ablationRow(t, rep, "-params"); r.Status != StatusMeasured {
		t.Errorf("-params: got status %q, want the other rows measured", r.Status)
	}
}

// TestConfigRetrievalSettings: --config brings the config's synonym groups
// into every index the run builds (a query whose only word is a user
// synonym finds its tool with the config and nothing without it), and a
// config whose embeddings section is off leaves the dense rows unmeasured
// with that reason. A config that cannot be loaded is a usage error.
func TestConfigRetrievalSettings(t *testing.T) {
	ds := testDatasets(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}, "synonyms": [["dossier", "directory"]]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	queries := filepath.Join(dir, "queries.json")
	if err := os.WriteFile(queries, []byte(`{"corpus_version": "corpus_v2@2026-07-14", "queries": [
		{"id": "q1", "query": "dossier", "labels": [{"tool_id": "filesystem:create_directory", "relevance": 2}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) Report {
		t.Helper()
		rep, _ := runAblation(t, ds, append([]string{"--queries", queries}, extra...)...)
		return rep
	}
	with, without := run("--config", cfg), run()
	if with.UserSynonymGroups != 1 || without.UserSynonymGroups != 0 {
		t.Errorf("user_synonym_groups: got %d with --config and %d without, want 1 and 0", with.UserSynonymGroups, without.UserSynonymGroups)
	}
	if r, ok := with.row("corpus_v2", "baseline_json"); !ok || r.Quality == nil || r.Quality.MRR == 0 {
		t.Errorf("with the config's [dossier directory]: got %+v, want create_directory ranked", r.Quality)
	}
	if r, ok := without.row("corpus_v2", "baseline_json"); !ok || r.Quality == nil || r.Quality.MRR != 0 {
		t.Errorf("without --config: got %+v, want nothing ranked for a word no tool uses", r.Quality)
	}
	// The ablation's indexes get the config's groups too.
	if r := ablationRow(t, with, "production"); r.Quality == nil || r.Quality.MRR == 0 {
		t.Errorf("ablation production row with --config: got %+v, want the synonym applied", r.Quality)
	}
	for _, v := range []string{"+dense", "dense-only"} {
		if r := ablationRow(t, with, v); r.Status != StatusUnavailable || !strings.Contains(r.UnavailableReason, "is off") {
			t.Errorf("%s with a config whose embeddings are off: got %q %q, want unavailable saying so", v, r.Status, r.UnavailableReason)
		}
	}
	if code, _, stderr := runMain(t, "run", "--config", filepath.Join(dir, "missing.json")); code != 2 || !strings.Contains(stderr, "--config") {
		t.Errorf("run --config missing.json: exit %d, stderr %q; want 2 naming --config", code, stderr)
	}
}
