package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAblation runs the retrieval ablation twice on corpus_v2 and checks
// that it is deterministic, complete and rendered.
func TestAblation(t *testing.T) {
	ds := testDatasets(t)
	var outs [2]string
	for i := range outs {
		outs[i] = filepath.Join(t.TempDir(), "r")
		code, _, stderr := runMain(t, "run", "--corpus", "corpus_v2="+filepath.Join(ds, CorpusV2File), "--arms", "baseline_json",
			"--fixtures", "none", "--no-discovery", "--expansion", "none", "--ablation", "--out", outs[i])
		if code != 0 {
			t.Fatalf("run %d: exit %d\nstderr: %s", i, code, stderr)
		}
	}
	read := func(dir, name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if !bytes.Equal(dropTimestamp(read(outs[0], "report.json")), dropTimestamp(read(outs[1], "report.json"))) {
		t.Error("report.json differs between two ablation runs")
	}

	var rep Report
	if err := json.Unmarshal(read(outs[0], "report.json"), &rep); err != nil {
		t.Fatal(err)
	}
	p := &Profile{}
	want := p.variants()
	if len(rep.Ablation) != len(want) {
		t.Fatalf("got %d ablation rows, want one per variant (%d)", len(rep.Ablation), len(want))
	}
	if rep.QueryExpansion != "off: turned off with --expansion none" {
		t.Errorf("got query_expansion %q, want it off with the reason", rep.QueryExpansion)
	}
	prod, ok := rep.row("corpus_v2", "baseline_json")
	if !ok || prod.Quality == nil {
		t.Fatal("no baseline_json quality row")
	}
	for i, r := range rep.Ablation {
		if r.Variant != want[i].name || r.Corpus != "corpus_v2" {
			t.Errorf("row %d: got %s on %s, want %s on corpus_v2", i, r.Variant, r.Corpus, want[i].name)
		}
		switch r.Variant {
		case "-expansion", "+dense", "dense-only":
			if r.Status != StatusUnavailable || r.UnavailableReason == "" {
				t.Errorf("%s: got status %q reason %q, want unavailable with a reason", r.Variant, r.Status, r.UnavailableReason)
			}
			continue
		}
		if r.Status != StatusMeasured || r.Quality == nil || len(r.QualityBySplit) != 2 {
			t.Errorf("%s: got status %q, %d splits; want measured on tune and heldout", r.Variant, r.Status, len(r.QualityBySplit))
			continue
		}
		if r.Quality.Queries != prod.Quality.Queries {
			t.Errorf("%s: got %d queries, want %d", r.Variant, r.Quality.Queries, prod.Quality.Queries)
		}
	}
	// The production variant is the index the arm rows measured.
	if got := *rep.Ablation[0].Quality; got != *prod.Quality {
		t.Errorf("production variant %+v differs from the baseline_json row %+v", got, *prod.Quality)
	}
	// Levers must do something: turning off parameter indexing changes
	// the figures.
	for _, r := range rep.Ablation {
		if r.Variant == "-params" && *r.Quality == *prod.Quality {
			t.Error("-params scored exactly like production: the variant did not reach the index")
		}
	}
	md := string(read(outs[0], "report.md"))
	for _, s := range []string{"## Retrieval ablation: corpus_v2", "| -server-mention |", "| bm25 k1=2 b=0.75 |", "Query expansion: off"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}
