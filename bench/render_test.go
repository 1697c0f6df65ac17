package bench

import (
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv/golden"
)

// sampleReport is a small hand-made report covering every section: a
// measured arm, a skipped arm, quality with splits and misses, discovery and
// toon_results.
func sampleReport() *Report {
	q := Quality{Queries: 2, RecallAt1: 0.5, RecallAt3: 0.5, RecallAt5: 1, RecallAt10: 1, MRR: 0.6667, NDCGAt10: 0.75, MAP: 0.6}
	return &Report{
		SchemaVersion: SchemaVersion,
		GeneratedAt:   "2026-01-02T03:04:05Z",
		Tokenizer:     "cl100k_base",
		Corpora:       []CorpusInfo{{Name: "tiny", Version: "tiny@1", Tools: 2, Servers: 1, QuerySet: "tiny.queries.json", Queries: 2, TuneQueries: 1, HeldoutQueries: 1}},
		Arms: []ArmRow{
			{Name: "baseline_json", Corpus: "tiny", Status: StatusMeasured, Tools: 2, TotalTokens: 100, MeanTokens: 50, P95Tokens: 60, ListingTokens: 100,
				BaselineTotalTokens: 100, BaselineListingTokens: 100, Heaviest: []ToolTokens{{"s:a", 60}, {"s:b", 40}},
				Quality: &q, QualityBySplit: map[string]Quality{SplitTune: q, SplitHeldout: q},
				MissesAt5: []Miss{{QueryID: "q2", Query: "a | pipe", Split: SplitHeldout, Want: "s:b", Rank: 0}}},
			{Name: "compact_sig", Corpus: "tiny", Status: StatusMeasured, IndexAltering: true, Tools: 1, TotalTokens: 30, MeanTokens: 30, P95Tokens: 30, ListingTokens: 31,
				BaselineTotalTokens: 60, BaselineListingTokens: 60, SavingsPct: 50, ListingSavingsPct: 48.33, Heaviest: []ToolTokens{{"s:a", 30}},
				Skipped: []SkippedTool{{ToolID: "s:b", Reason: "schema of tool \"s:b\": not an object"}}, Quality: &q},
			{Name: "toon_listing", Corpus: "tiny", Status: StatusMeasured, IndexAltering: true, LowerBound: true, Tools: 2, TotalTokens: 120, MeanTokens: 60, P95Tokens: 70, ListingTokens: 125,
				BaselineTotalTokens: 100, BaselineListingTokens: 100, SavingsPct: -20, ListingSavingsPct: -25},
			{Name: "tscg", Corpus: "tiny", Status: StatusUnavailable, UnavailableReason: "tscg: node not found: arm runtime unavailable"},
		},
		Discovery: []DiscoveryRow{{Corpus: "tiny", Arm: "compact_sig", MenuTokens: 30, MenuToolTokens: 25, InstructionsTokens: 5, UpfrontTokens: 100,
			Answers: []AnswerCost{{Limit: 5, Queries: 2, Spread: Spread{P50: 10, P95: 20, Max: 20, Mean: 15}, BreakEvenCalls: 4.67},
				{Limit: 15, Queries: 2, Spread: Spread{P50: 20, P95: 30, Max: 30, Mean: 25}, BreakEvenCalls: 2.8}}}},
		Sessions: []SessionRow{{Corpus: "tiny", Arm: "compact_sig", NoaOn: MenuCost{Tools: 5, Tokens: 60, ToolTokens: 45, InstructionsTokens: 15},
			NoaOff: MenuCost{Tools: 3, Tokens: 30, ToolTokens: 25, InstructionsTokens: 5}, RefTagTokens: 11,
			FirstNudgeTokens: 900, FirstNudgeCall: 19, LaterNudgeTokens: 80, LaterNudgeCall: 25, ContextLimit: 64000, ResultTokens: 1500,
			Describe: Spread{P50: 70, P95: 90, Max: 95, Mean: 72.5}}},
		ToonResults: &ToonResultsReport{Fixtures: "fx_v1", Rows: []ToonResultsRow{{Name: "baseline_json", Payloads: 2, TotalTokens: 50, MeanTokens: 25, P95Tokens: 30},
			{Name: "toon_results", Payloads: 2, TotalTokens: 40, MeanTokens: 20, P95Tokens: 25, SavingsPct: 20}},
			TabularJSONTokens: 30, TabularToonTokens: 20, TabularSavingsPct: 33.33, NonTabularJSONTokens: 20, NonTabularToonTokens: 20},
		Notes: []string{"tiny: an example note"},
	}
}

func TestRenderGolden(t *testing.T) {
	rep := sampleReport()
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file string
		got  string
	}{
		{"sample.report.json", string(js)},
		{"sample.report.md", rep.Markdown()},
		{"sample.report.svg", rep.SVG()},
	} {
		t.Run(tc.file, func(t *testing.T) {
			golden.Check(t, filepath.Join("testdata", tc.file), []byte(tc.got))
		})
	}
}

func TestBreakEvenAndSpread(t *testing.T) {
	tests := []struct {
		name          string
		upfront, menu int
		answer, want  float64
	}{
		// (4465 - 292) / 300 = 13.91
		{"typical", 4465, 292, 300, 13.91},
		{"menu as large as catalog", 100, 100, 10, 0},
		{"empty answers", 100, 10, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := breakEven(tc.upfront, tc.menu, tc.answer); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// Nearest rank over {10, 20, 30, 40}: p50 = 2nd value (20), p95 = 4th (40);
	// mean = 100/4 = 25.
	got := percentiles([]int{40, 10, 30, 20})
	if want := (Spread{P50: 20, P95: 40, Max: 40, Mean: 25}); got != want {
		t.Errorf("percentiles: got %+v, want %+v", got, want)
	}
	if got := percentiles(nil); got != (Spread{}) {
		t.Errorf("percentiles of nothing: got %+v, want zero", got)
	}
}
