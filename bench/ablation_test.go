package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/arms"
)

// TestAblation runs the retrieval ablation twice on corpus_v2 and checks
// that it is deterministic, complete and rendered.
func TestAblation(t *testing.T) {
	profile := Profile{Arms: []string{arms.BaselineName}, Ablation: true, ExpandUnavailable: "turned off by the test"}
	rep, raw := runProfile(t, profile)
	_, again := runProfile(t, profile)
	if !bytes.Equal(raw, again) {
		t.Error("report.json differs between two ablation runs")
	}
	p := &Profile{}
	want := p.variants()
	if len(rep.Ablation) != len(want) {
		t.Fatalf("got %d ablation rows, want one per variant (%d)", len(rep.Ablation), len(want))
	}
	if rep.QueryExpansion != "off: turned off by the test" {
		t.Errorf("got query_expansion %q, want it off with the reason", rep.QueryExpansion)
	}
	prod, ok := rep.Row("corpus_v2", "baseline_json")
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
	md := rep.Markdown()
	for _, s := range []string{"## Retrieval ablation: corpus_v2", "| -server-mention |", "| bm25 k1=2 b=0.75 |", "Query expansion: off"} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}
