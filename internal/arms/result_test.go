package arms

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		values []int
		p      float64
		want   int
	}{
		{nil, 95, 0},
		{[]int{7}, 95, 7},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 95, 10}, // rank ceil(9.5) = 10
		{[]int{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 50, 5},  // rank 5 of the sorted values
		{[]int{20, 1, 3}, 95, 20},
		{append(make([]int, 19), 100), 95, 0}, // rank 19 of 20: a single outlier stays out
	}
	for _, tc := range tests {
		in := append([]int(nil), tc.values...)
		if got := Percentile(tc.values, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %v) = %d, want %d", tc.values, tc.p, got, tc.want)
		}
		if diff := cmp.Diff(in, tc.values); diff != "" {
			t.Errorf("Percentile modified its input (-before +after):\n%s", diff)
		}
	}
}

func TestSavingsPct(t *testing.T) {
	if got := SavingsPct(200, 50); got != 75 {
		t.Errorf("SavingsPct(200, 50) = %v, want 75", got)
	}
	if got := SavingsPct(100, 150); got != -50 {
		t.Errorf("SavingsPct(100, 150) = %v, want -50", got)
	}
	if got := SavingsPct(0, 10); got != 0 {
		t.Errorf("SavingsPct(0, 10) = %v, want 0", got)
	}
}

// wordCounter counts whitespace-separated words, so expectations below can
// be computed by hand.
type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }

func TestMeasure(t *testing.T) {
	tools := []config.Tool{
		{ID: "s:a", Server: "s", Name: "a", Description: "one two three", Schema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"string","description":"the x value"}},"required":["x"]}`)},
		{ID: "s:b", Server: "s", Name: "b", Description: "four"},
		{ID: "s:bad", Server: "s", Name: "bad", Schema: json.RawMessage(`[]`)},
	}
	got, err := Measure(NewCompact(), wordCounter{}, tools)
	if err != nil {
		t.Fatal(err)
	}
	// compact: "s:a(x:string)|one two three" = 3 words, "s:b()|four" = 1.
	// baseline: "s:a\none two three\n{...the x value...}" = 1+3+3 = 7; "s:b\nfour" = 2.
	// Listings add the blank-line separator, which has no words.
	want := Result{
		Name: CompactName, Items: 2,
		Skipped:     []Skip{{ID: "s:bad", Reason: `schema of tool "s:bad": input schema must be a JSON object, got an array`}},
		TotalTokens: 4, MeanTokens: 2, P95Tokens: 3, ListingTokens: 4,
		BaselineTokens: 9, BaselineListingTokens: 9,
		SavingsPct: 100 * 5.0 / 9, ListingSavingsPct: 100 * 5.0 / 9,
		IndexAltering: true,
		Heaviest:      []ItemTokens{{"s:a", 3}, {"s:b", 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure (-want +got):\n%s", diff)
	}
}

// TestSavingsOnCorpus measures every pure arm on corpus_v2 with both real
// tokenizers and checks issue 4's bar: compact_sig saves at least 50% of the
// baseline's tokens, per tool and on the whole listing. The figures are
// logged for the record.
func TestSavingsOnCorpus(t *testing.T) {
	tools := loadCorpus(t)
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		tk, err := tokens.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pureArms() {
			r, err := Measure(a, tk, tools)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %v", enc, r)
			if len(r.Skipped) != 0 {
				t.Errorf("%s skipped %v on corpus_v2", a.Name(), r.Skipped)
			}
			if a.Name() == CompactName && (r.SavingsPct < 50 || r.ListingSavingsPct < 50) {
				t.Errorf("%s: compact_sig saves %.1f%% per tool and %.1f%% on the listing against the baseline on corpus_v2, want at least 50%% each",
					enc, r.SavingsPct, r.ListingSavingsPct)
			}
			if a.Name() == BaselineName && (r.SavingsPct != 0 || r.TotalTokens != r.BaselineTokens) {
				t.Errorf("the baseline measured against itself: %v", r)
			}
			if math.IsNaN(r.MeanTokens) || r.P95Tokens == 0 || len(r.Heaviest) != HeaviestCount {
				t.Errorf("%s: incomplete row %+v", a.Name(), r)
			}
		}
	}
}

func TestUnavailableResult(t *testing.T) {
	r := UnavailableResult(TSCGName, NewTSCG(nil).Available())
	if r.Name != TSCGName || !strings.Contains(r.Unavailable, "no Node runner") || r.Items != 0 {
		t.Errorf("got %+v", r)
	}
}
