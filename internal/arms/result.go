package arms

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TokenCounter counts the tokens of a text under one tokenizer.
// internal/tokens.Counter implements it.
type TokenCounter interface {
	Count(text string) int
}

// Skip records one item an arm could not encode.
type Skip struct {
	// ID is the tool id ("server:tool") or result fixture id.
	ID string `json:"id"`
	// Reason is the encoding error, as text.
	Reason string `json:"reason"`
}

// Result is one report row: the cost of one arm over one corpus. Savings are
// measured against the baseline over the same items the arm encoded, so a
// skipped tool never inflates them.
type Result struct {
	// Name is the arm's registry or report name.
	Name string `json:"name"`
	// Unavailable is the reason the whole arm was skipped (its runtime is
	// missing); when set, every other field but Name is zero.
	Unavailable string `json:"unavailable,omitempty"`
	// Items is how many items (tools or result payloads) were encoded.
	Items int `json:"items"`
	// Skipped lists the items the arm could not encode, in input order.
	Skipped []Skip `json:"skipped,omitempty"`
	// TotalTokens is the sum of the per-item token counts.
	TotalTokens int `json:"total_tokens"`
	// MeanTokens is TotalTokens / Items (0 when nothing was encoded).
	MeanTokens float64 `json:"mean_tokens"`
	// P95Tokens is the nearest-rank 95th percentile of per-item counts.
	P95Tokens int `json:"p95_tokens"`
	// ListingTokens is the token count of the arm's whole listing of the
	// encoded items, shared preamble included (0 for result payloads, which
	// have no listing form).
	ListingTokens int `json:"listing_tokens"`
	// BaselineTokens is the baseline's per-item total over the same items.
	BaselineTokens int `json:"baseline_tokens"`
	// BaselineListingTokens is the baseline listing's count over the same
	// items (0 for result payloads).
	BaselineListingTokens int `json:"baseline_listing_tokens"`
	// SavingsPct is 100 * (1 - TotalTokens/BaselineTokens): positive when
	// the arm is cheaper, negative when it costs more, 0 with no baseline.
	SavingsPct float64 `json:"savings_pct"`
	// ListingSavingsPct is the same ratio for the listings.
	ListingSavingsPct float64 `json:"listing_savings_pct"`
	// LowerBound is true when the arm drops description text, so its savings
	// are a lower bound on the cost of carrying the same information.
	LowerBound bool `json:"lower_bound"`
	// IndexAltering is true when the arm changes what the index ingests.
	IndexAltering bool `json:"index_altering"`
	// Heaviest lists the items with the most tokens under the arm, heaviest
	// first (ties by ID), at most HeaviestCount of them.
	Heaviest []ItemTokens `json:"heaviest,omitempty"`
}

// ItemTokens is the token count of one encoded item.
type ItemTokens struct {
	ID     string `json:"id"`
	Tokens int    `json:"tokens"`
}

// HeaviestCount is how many items Result.Heaviest keeps.
const HeaviestCount = 5

// UnavailableResult is the row of an arm that could not be resolved.
func UnavailableResult(name string, err error) Result {
	return Result{Name: name, Unavailable: err.Error()}
}

// Measure encodes each tool with a, counts tokens with tk and assembles the
// arm's row. Tools a cannot encode are listed in Skipped and left out of
// every figure, the baseline's included. An error is returned only when a
// listing fails although each of its tools encoded alone, or when the
// baseline cannot render a tool a could.
func Measure(a Arm, tk TokenCounter, tools []config.Tool) (Result, error) {
	res := Result{Name: a.Name(), LowerBound: a.LowerBound(), IndexAltering: a.IndexAltering()}
	var ok []config.Tool
	var counts []ItemTokens
	for _, t := range tools {
		enc, err := a.EncodeTool(t)
		if err != nil {
			res.Skipped = append(res.Skipped, Skip{ID: callName(t), Reason: err.Error()})
			continue
		}
		base, err := CanonicalToolText(t)
		if err != nil {
			return Result{}, fmt.Errorf("measuring %s: baseline of %q: %w", a.Name(), callName(t), err)
		}
		ok = append(ok, t)
		counts = append(counts, ItemTokens{ID: callName(t), Tokens: tk.Count(enc)})
		res.BaselineTokens += tk.Count(base)
	}
	fill(&res, counts)
	if len(ok) > 0 {
		listing, err := a.EncodeListing(ok)
		if err != nil {
			return Result{}, fmt.Errorf("measuring %s: listing: %w", a.Name(), err)
		}
		baseListing, err := NewBaseline().EncodeListing(ok)
		if err != nil {
			return Result{}, fmt.Errorf("measuring %s: baseline listing: %w", a.Name(), err)
		}
		res.ListingTokens = tk.Count(listing)
		res.BaselineListingTokens = tk.Count(baseListing)
	}
	res.SavingsPct = SavingsPct(res.BaselineTokens, res.TotalTokens)
	res.ListingSavingsPct = SavingsPct(res.BaselineListingTokens, res.ListingTokens)
	return res, nil
}

// fill sets the per-item figures of res from counts.
func fill(res *Result, counts []ItemTokens) {
	res.Items = len(counts)
	values := make([]int, len(counts))
	for i, c := range counts {
		res.TotalTokens += c.Tokens
		values[i] = c.Tokens
	}
	if len(counts) == 0 {
		return
	}
	res.MeanTokens = float64(res.TotalTokens) / float64(len(counts))
	res.P95Tokens = Percentile(values, 95)
	heavy := append([]ItemTokens(nil), counts...)
	sort.Slice(heavy, func(i, j int) bool {
		if heavy[i].Tokens != heavy[j].Tokens {
			return heavy[i].Tokens > heavy[j].Tokens
		}
		return heavy[i].ID < heavy[j].ID
	})
	if len(heavy) > HeaviestCount {
		heavy = heavy[:HeaviestCount]
	}
	res.Heaviest = heavy
}

// SavingsPct is 100 * (baseline - arm) / baseline, or 0 when baseline is 0.
func SavingsPct(baseline, arm int) float64 {
	if baseline == 0 {
		return 0
	}
	return 100 * float64(baseline-arm) / float64(baseline)
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of values,
// which it does not modify; 0 for no values.
func Percentile(values []int, p float64) int {
	if len(values) == 0 {
		return 0
	}
	s := append([]int(nil), values...)
	sort.Ints(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// String is a one-line summary, for logs and test failures.
func (r Result) String() string {
	if r.Unavailable != "" {
		return r.Name + ": unavailable: " + r.Unavailable
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d items, %d skipped, total %d (baseline %d, %.1f%% saved), listing %d (baseline %d, %.1f%% saved)",
		r.Name, r.Items, len(r.Skipped), r.TotalTokens, r.BaselineTokens, r.SavingsPct,
		r.ListingTokens, r.BaselineListingTokens, r.ListingSavingsPct)
	return b.String()
}
