package bench

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcproxy/mcproxy/internal/arms"
)

// SchemaVersion is the version of report.json's schema (docs/bench.md).
// Bump it on any change a reader of the file would notice.
const SchemaVersion = 3

// Arm row statuses.
const (
	StatusMeasured    = "measured"
	StatusUnavailable = "unavailable"
)

// Report is everything one profiler run measured. Apart from GeneratedAt,
// the same inputs always give the same bytes.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	GeneratedAt   string `json:"generated_at"`
	Tokenizer     string `json:"tokenizer"`
	// QueryExpansion says whether the indexes expanded queries with word
	// embeddings: "on", or "off" and why.
	QueryExpansion string `json:"query_expansion,omitempty"`
	// UserSynonymGroups counts the synonym groups a --config added to the
	// built-in lexicon of every index the run built.
	UserSynonymGroups int `json:"user_synonym_groups,omitempty"`
	// Corpora describes each measured corpus and its query set.
	Corpora []CorpusInfo `json:"corpora"`
	// Arms holds one row per arm per corpus, corpora in order, baseline
	// first within each.
	Arms []ArmRow `json:"arms"`
	// Discovery prices retrieve-mode discovery per corpus and listing arm.
	Discovery []DiscoveryRow `json:"discovery,omitempty"`
	// Sessions prices what noa adds to a session, per corpus, under the
	// default listing arm.
	Sessions []SessionRow `json:"sessions,omitempty"`
	// ToonResults compares TOON with compact JSON on recorded tool results.
	ToonResults *ToonResultsReport `json:"toon_results,omitempty"`
	// Ablation holds the retrieval ablation (--ablation): one row per
	// variant per corpus with a query set.
	Ablation []AblationRow `json:"ablation,omitempty"`
	// Learning holds the learning-from-use simulation (--learn), per
	// corpus, clean and noisy.
	Learning []LearnResult `json:"learning,omitempty"`
	// Profiles holds retrieval inside a profile, per corpus with a query
	// set: the profile's own index against the full one restricted.
	Profiles []ProfileRow `json:"profiles,omitempty"`
	// Notes lists measurements that were not taken, and why.
	Notes []string `json:"notes,omitempty"`
}

// CorpusInfo identifies a measured corpus.
type CorpusInfo struct {
	Name           string `json:"name"`
	Version        string `json:"version"`
	Tools          int    `json:"tools"`
	Servers        int    `json:"servers"`
	QuerySet       string `json:"query_set,omitempty"`
	Queries        int    `json:"queries,omitempty"`
	TuneQueries    int    `json:"tune_queries,omitempty"`
	HeldoutQueries int    `json:"heldout_queries,omitempty"`
}

// ArmRow is one arm measured on one corpus.
type ArmRow struct {
	Name   string `json:"name"`
	Corpus string `json:"corpus"`
	// Status is "measured" or "unavailable" (UnavailableReason says why).
	Status            string `json:"status"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	IndexAltering     bool   `json:"index_altering"`
	LowerBound        bool   `json:"lower_bound"`
	// Tools is how many tools the arm encoded; Skipped the ones it could not.
	Tools   int           `json:"tools"`
	Skipped []SkippedTool `json:"skipped,omitempty"`
	// Per-tool figures (EncodeTool) and the whole listing (EncodeListing).
	TotalTokens   int     `json:"total_tokens"`
	MeanTokens    float64 `json:"mean_tokens"`
	P95Tokens     int     `json:"p95_tokens"`
	ListingTokens int     `json:"listing_tokens"`
	// Baseline figures over the same tools, and the savings against them
	// (percent; negative = the arm costs more).
	BaselineTotalTokens   int          `json:"baseline_total_tokens"`
	BaselineListingTokens int          `json:"baseline_listing_tokens"`
	SavingsPct            float64      `json:"savings_pct"`
	ListingSavingsPct     float64      `json:"listing_savings_pct"`
	Heaviest              []ToolTokens `json:"heaviest,omitempty"`
	// Quality is measured for the baseline and every index-altering arm when
	// the corpus has a query set; QualityBySplit has the tune and heldout
	// halves.
	Quality        *Quality           `json:"quality,omitempty"`
	QualityBySplit map[string]Quality `json:"quality_by_split,omitempty"`
	// MissesAt5 lists the queries whose relevance-2 tool was not in the top 5.
	MissesAt5 []Miss `json:"misses_at_5,omitempty"`
	// IndexSkipped lists tools whose index metadata the arm could not build.
	IndexSkipped []SkippedTool `json:"index_skipped,omitempty"`
}

// SkippedTool is a tool left out of a measurement, with the reason.
type SkippedTool struct {
	ToolID string `json:"tool_id"`
	Reason string `json:"reason"`
}

// ToolTokens is one tool's token count.
type ToolTokens struct {
	ToolID string `json:"tool_id"`
	Tokens int    `json:"tokens"`
}

// Miss is a query whose relevance-2 tool ranked below 5 (Rank 0 = not
// retrieved at all), with the top 5 the index returned instead.
type Miss struct {
	QueryID string   `json:"query_id"`
	Query   string   `json:"query"`
	Split   string   `json:"split,omitempty"`
	Want    string   `json:"want"`
	Rank    int      `json:"rank"`
	Top     []string `json:"top"`
}

// DiscoveryRow prices discovery for one corpus under one listing arm.
type DiscoveryRow struct {
	Corpus string `json:"corpus"`
	Arm    string `json:"arm"`
	// MenuTokens = MenuToolTokens (the meta tools' definitions as listed,
	// rendered like the baseline) + InstructionsTokens (initialize's
	// instructions): the standing cost of retrieve mode.
	MenuTokens         int `json:"menu_tokens"`
	MenuToolTokens     int `json:"menu_tool_tokens"`
	InstructionsTokens int `json:"instructions_tokens"`
	// UpfrontTokens is the baseline listing of every corpus tool: the cost
	// of exposing them all directly.
	UpfrontTokens int          `json:"upfront_tokens"`
	Answers       []AnswerCost `json:"answers"`
}

// SessionRow is what a session pays for noa and discovery beyond the
// retrieve_tools answers, through the front users get (measureSession).
type SessionRow struct {
	Corpus string `json:"corpus"`
	Arm    string `json:"arm"`
	// NoaOn is the menu with noa (the default), NoaOff without it.
	NoaOn  MenuCost `json:"menu_noa_on"`
	NoaOff MenuCost `json:"menu_noa_off"`
	// RefTagTokens is the tag noa adds to each call_tool result.
	RefTagTokens int `json:"ref_tag_tokens"`
	// FirstNudgeTokens is the session's first nudge (it carries the
	// compression rules), LaterNudgeTokens the next one; the Call fields
	// say at which call of the scripted session each came.
	FirstNudgeTokens int `json:"first_nudge_tokens"`
	FirstNudgeCall   int `json:"first_nudge_call"`
	LaterNudgeTokens int `json:"later_nudge_tokens"`
	LaterNudgeCall   int `json:"later_nudge_call"`
	// ContextLimit is the window the scripted session was paced against,
	// ResultTokens the size of each of its call_tool results.
	ContextLimit int `json:"context_limit"`
	ResultTokens int `json:"result_tokens"`
	// Describe spreads the describe_tool answers for every corpus tool (an
	// even sample of 100 in a larger corpus).
	Describe Spread `json:"describe_tool"`
}

// MenuCost is a front's standing cost: its tools as tools/list returns
// them, rendered like the baseline, plus its initialize instructions.
type MenuCost struct {
	Tools              int `json:"tools"`
	Tokens             int `json:"tokens"`
	ToolTokens         int `json:"tool_tokens"`
	InstructionsTokens int `json:"instructions_tokens"`
}

// AnswerCost is the size of retrieve_tools answers at one limit.
type AnswerCost struct {
	Limit   int `json:"limit"`
	Queries int `json:"queries"`
	Spread
	// BreakEvenCalls = (UpfrontTokens - MenuTokens) / Mean: with fewer
	// retrieve_tools calls than this, discovery costs less than loading
	// every tool up front.
	BreakEvenCalls float64 `json:"break_even_calls"`
}

// Spread summarises token counts: nearest-rank p50 and p95, max and mean.
type Spread struct {
	P50  int     `json:"p50_tokens"`
	P95  int     `json:"p95_tokens"`
	Max  int     `json:"max_tokens"`
	Mean float64 `json:"mean_tokens"`
}

// ToonResultsReport holds the toon_results rows: compact JSON then TOON of
// the same recorded tool results, with the tabular/non-tabular split.
type ToonResultsReport struct {
	Fixtures             string           `json:"fixtures"`
	Rows                 []ToonResultsRow `json:"rows"`
	TabularJSONTokens    int              `json:"tabular_json_tokens"`
	TabularToonTokens    int              `json:"tabular_toon_tokens"`
	TabularSavingsPct    float64          `json:"tabular_savings_pct"`
	NonTabularJSONTokens int              `json:"non_tabular_json_tokens"`
	NonTabularToonTokens int              `json:"non_tabular_toon_tokens"`
	NonTabularSavingsPct float64          `json:"non_tabular_savings_pct"`
}

// ToonResultsRow is one encoding of the result payloads.
type ToonResultsRow struct {
	Name        string        `json:"name"`
	Payloads    int           `json:"payloads"`
	Skipped     []SkippedTool `json:"skipped,omitempty"`
	TotalTokens int           `json:"total_tokens"`
	MeanTokens  float64       `json:"mean_tokens"`
	P95Tokens   int           `json:"p95_tokens"`
	SavingsPct  float64       `json:"savings_pct"`
	Heaviest    []ToolTokens  `json:"heaviest,omitempty"`
}

// JSON encodes the report, indented, with a trailing newline.
func (r *Report) JSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding report: %w", err)
	}
	return buf.Bytes(), nil
}

// Row finds the arm row for corpus and arm name.
func (r *Report) Row(corpus, arm string) (ArmRow, bool) {
	for _, a := range r.Arms {
		if a.Corpus == corpus && a.Name == arm {
			return a, true
		}
	}
	return ArmRow{}, false
}

// toonResultsReport copies the arms package's measurement into report form.
func toonResultsReport(fixtureID string, tr *arms.ToonResultsRun) *ToonResultsReport {
	out := &ToonResultsReport{
		Fixtures:             fixtureID,
		TabularJSONTokens:    tr.TabularBaselineTokens,
		TabularToonTokens:    tr.TabularToonTokens,
		TabularSavingsPct:    round2(arms.SavingsPct(tr.TabularBaselineTokens, tr.TabularToonTokens)),
		NonTabularJSONTokens: tr.NonTabularBaselineTokens,
		NonTabularToonTokens: tr.NonTabularToonTokens,
		NonTabularSavingsPct: round2(arms.SavingsPct(tr.NonTabularBaselineTokens, tr.NonTabularToonTokens)),
	}
	for _, r := range tr.Rows {
		row := ToonResultsRow{Name: r.Name, Payloads: r.Items, TotalTokens: r.TotalTokens, MeanTokens: round2(r.MeanTokens), P95Tokens: r.P95Tokens, SavingsPct: round2(r.SavingsPct)}
		for _, s := range r.Skipped {
			row.Skipped = append(row.Skipped, SkippedTool{ToolID: s.ID, Reason: s.Reason})
		}
		for _, h := range r.Heaviest {
			row.Heaviest = append(row.Heaviest, ToolTokens{ToolID: h.ID, Tokens: h.Tokens})
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}
