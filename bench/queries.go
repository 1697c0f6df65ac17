package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Split names of a query set's two halves (issue 6): tune is what retrieval
// work may be tuned on, heldout is reported but never tuned on.
const (
	SplitTune    = "tune"
	SplitHeldout = "heldout"
	// SplitFirst and SplitLater are the two phrasings of one need in a pair
	// set (`mcproxy bench --learn`): what the user says the first time, and
	// on a later occasion.
	SplitFirst = "first"
	SplitLater = "later"
)

// Label grades one tool for a query: 2 = the tool the user needs, 1 = an
// acceptable alternative, 0 = explicitly not relevant.
type Label struct {
	ToolID    string `json:"tool_id"`
	Relevance int    `json:"relevance"`
}

// Query is one graded retrieval query.
type Query struct {
	ID    string `json:"id"`
	Query string `json:"query"`
	Split string `json:"split,omitempty"`
	// Pair joins the first and later phrasing of one need (pair sets
	// only; their split is first or later).
	Pair   string  `json:"pair,omitempty"`
	Labels []Label `json:"labels"`
}

// QuerySet is the on-disk format of a graded query file.
type QuerySet struct {
	CorpusVersion string  `json:"corpus_version"`
	Queries       []Query `json:"queries"`
}

// LoadQuerySet reads and validates a graded query file.
func LoadQuerySet(path string) (*QuerySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading query set: %w", err)
	}
	qs, err := ParseQuerySet(data)
	if err != nil {
		return nil, fmt.Errorf("query set %s: %w", path, err)
	}
	return qs, nil
}

// ParseQuerySet decodes a graded query file strictly (unknown fields are an
// error, so a misspelt "relevence" cannot silently grade a tool 0) and checks
// every query: non-empty unique id and text, a known split or none, grades in
// 0..2, no tool graded twice, and exactly one relevance-2 label.
func ParseQuerySet(data []byte) (*QuerySet, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var qs QuerySet
	if err := dec.Decode(&qs); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(qs.Queries) == 0 {
		return nil, errors.New("no queries")
	}
	seen := make(map[string]bool, len(qs.Queries))
	for i, q := range qs.Queries {
		where := fmt.Sprintf("queries[%d]", i)
		if q.ID != "" {
			where = fmt.Sprintf("queries[%d] (%s)", i, q.ID)
		}
		if err := q.validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if seen[q.ID] {
			return nil, fmt.Errorf("%s: duplicate id", where)
		}
		seen[q.ID] = true
	}
	return &qs, nil
}

func (q Query) validate() error {
	if q.ID == "" {
		return errors.New("empty id")
	}
	if q.Query == "" {
		return errors.New("empty query text")
	}
	switch {
	case q.Pair != "" && q.Split != SplitFirst && q.Split != SplitLater:
		return fmt.Errorf("pair %s: split %q, want %q or %q", q.Pair, q.Split, SplitFirst, SplitLater)
	case q.Pair != "":
	case q.Split == "", q.Split == SplitTune, q.Split == SplitHeldout:
	default:
		return fmt.Errorf("split %q: want %q, %q or none", q.Split, SplitTune, SplitHeldout)
	}
	targets := 0
	graded := make(map[string]bool, len(q.Labels))
	for j, l := range q.Labels {
		if l.ToolID == "" {
			return fmt.Errorf("labels[%d]: empty tool_id", j)
		}
		if l.Relevance < 0 || l.Relevance > 2 {
			return fmt.Errorf("labels[%d] (%s): relevance %d out of range 0..2", j, l.ToolID, l.Relevance)
		}
		if graded[l.ToolID] {
			return fmt.Errorf("labels[%d]: %s graded twice", j, l.ToolID)
		}
		graded[l.ToolID] = true
		if l.Relevance == 2 {
			targets++
		}
	}
	if targets != 1 {
		return fmt.Errorf("%d labels with relevance 2, want exactly 1", targets)
	}
	return nil
}

// CheckTools reports every label naming a tool id not in ids, so a query file
// can be matched against the corpus it claims to grade.
func (qs *QuerySet) CheckTools(ids map[string]bool) error {
	var errs []error
	for _, q := range qs.Queries {
		for _, l := range q.Labels {
			if !ids[l.ToolID] {
				errs = append(errs, fmt.Errorf("query %s: unknown tool %q", q.ID, l.ToolID))
			}
		}
	}
	return errors.Join(errs...)
}

// withSplit returns the queries of one split ("" = all), in file order.
func (qs *QuerySet) withSplit(split string) []Query {
	if split == "" {
		return qs.Queries
	}
	var out []Query
	for _, q := range qs.Queries {
		if q.Split == split {
			out = append(out, q)
		}
	}
	return out
}
