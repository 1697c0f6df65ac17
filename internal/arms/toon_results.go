package arms

import (
	"fmt"

	"github.com/mcproxy/mcproxy/internal/toon"
)

// ToonResultsRun is one toon_results measurement: the result payloads of a
// fixture set as compact canonical JSON and as TOON, with the split by
// payload class behind the totals.
type ToonResultsRun struct {
	// Rows holds two report rows: Rows[0] is the payloads as canonical JSON
	// (arm baseline_json, savings 0), Rows[1] the same payloads as TOON (arm
	// toon_results, savings against Rows[0]). Keeping the baseline row lets a
	// reader recompute the savings from the report alone.
	Rows []Result `json:"rows"`
	// TabularToonTokens and TabularBaselineTokens total the tabular payloads
	// under TOON and under canonical JSON.
	TabularToonTokens     int `json:"tabular_toon_tokens"`
	TabularBaselineTokens int `json:"tabular_baseline_tokens"`
	// NonTabularToonTokens and NonTabularBaselineTokens total the other
	// payloads.
	NonTabularToonTokens     int `json:"non_tabular_toon_tokens"`
	NonTabularBaselineTokens int `json:"non_tabular_baseline_tokens"`
}

// RunToonResults encodes every payload of fx as canonical JSON and as TOON,
// counts both with tk and builds the two rows. Payloads are taken in file
// order; both encodings start from the canonical JSON (sorted keys), so the
// figures do not depend on the key order of the fixture file. A payload TOON
// cannot encode is a skip in the TOON row and is left out of both rows'
// figures, so the comparison stays like for like.
func RunToonResults(tk TokenCounter, fx *ResultFixtureSet) (*ToonResultsRun, error) {
	if fx == nil || len(fx.Results) == 0 {
		return nil, fmt.Errorf("running %s: no result fixtures", ToonResultsName)
	}
	run := &ToonResultsRun{}
	base := Result{Name: BaselineName}
	tr := Result{Name: ToonResultsName}
	var baseCounts, toonCounts []ItemTokens
	for i, r := range fx.Results {
		canon, err := CanonicalJSON(r.Payload)
		if err != nil {
			return nil, fmt.Errorf("running %s: results[%d] (tool_id %q): %w", ToonResultsName, i, r.ToolID, err)
		}
		enc, err := toon.EncodeJSON([]byte(canon), toon.Options{})
		if err != nil {
			tr.Skipped = append(tr.Skipped, Skip{ID: r.ToolID, Reason: err.Error()})
			continue
		}
		b, t := tk.Count(canon), tk.Count(enc)
		baseCounts = append(baseCounts, ItemTokens{ID: r.ToolID, Tokens: b})
		toonCounts = append(toonCounts, ItemTokens{ID: r.ToolID, Tokens: t})
		if r.PayloadClassHint == PayloadClassTabular {
			run.TabularBaselineTokens += b
			run.TabularToonTokens += t
		} else {
			run.NonTabularBaselineTokens += b
			run.NonTabularToonTokens += t
		}
	}
	fill(&base, baseCounts)
	fill(&tr, toonCounts)
	base.BaselineTokens = base.TotalTokens
	tr.BaselineTokens = base.TotalTokens
	tr.SavingsPct = SavingsPct(tr.BaselineTokens, tr.TotalTokens)
	run.Rows = []Result{base, tr}
	return run, nil
}

// TabularSavingsPct is TOON's savings against canonical JSON on the tabular
// payloads (0 when there were none).
func (r *ToonResultsRun) TabularSavingsPct() float64 {
	return SavingsPct(r.TabularBaselineTokens, r.TabularToonTokens)
}

// NonTabularSavingsPct is TOON's savings against canonical JSON on the other
// payloads (0 when there were none).
func (r *ToonResultsRun) NonTabularSavingsPct() float64 {
	return SavingsPct(r.NonTabularBaselineTokens, r.NonTabularToonTokens)
}
