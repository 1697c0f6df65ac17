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
	out := t.TempDir()
	code, _, stderr := runMain(t, "run", "--corpus", "corpus_v2="+filepath.Join(ds, CorpusV2File), "--arms", "baseline_json",
		"--fixtures", "none", "--no-discovery", "--expansion", "none", "--ablation", "--config", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, raw, dataDir
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

func TestAblationDenseConfigOff(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, reason, err := denseFromConfig(cfg)
	if err != nil || d != nil || !strings.Contains(reason, "off") {
		t.Errorf("config without embeddings: got %v, %q, %v; want no setup and a reason saying it is off", d, reason, err)
	}
	if _, _, err := denseFromConfig(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing config file: got no error")
	}
	if code, _, stderr := runMain(t, "run", "--config", filepath.Join(t.TempDir(), "missing.json")); code != 2 || !strings.Contains(stderr, "--config") {
		t.Errorf("run --config missing.json: exit %d, stderr %q; want 2 naming --config", code, stderr)
	}
}
