package arms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Payload classes of a result fixture. A payload is tabular when it is a
// non-empty JSON array of flat objects (no nested arrays or objects) that all
// have the same keys; every other payload is non-tabular. TOON is expected
// to win on the first kind and not on the second, so results are reported
// split by class.
const (
	PayloadClassTabular    = "tabular"
	PayloadClassNonTabular = "non_tabular"
)

// ResultFixture is one recorded tool-call result.
type ResultFixture struct {
	// ToolID is the "server:tool" id of the tool that produced the payload.
	ToolID string `json:"tool_id"`
	// PayloadClassHint is PayloadClassTabular or PayloadClassNonTabular and
	// must agree with the payload's shape.
	PayloadClassHint string `json:"payload_class_hint"`
	// Payload is the result as JSON (a string for text results).
	Payload json.RawMessage `json:"payload"`
}

// ResultFixtureSet is a frozen, versioned set of tool-call results, the
// format of result_fixtures_v1.json.
type ResultFixtureSet struct {
	// Captured is the capture date.
	Captured string `json:"captured"`
	// FixtureID names the set and its version, e.g. "result_fixtures_v1".
	FixtureID string `json:"fixture_id"`
	// Results are the payloads, in file order.
	Results []ResultFixture `json:"results"`
}

// ParseResultFixtures decodes and validates a result-fixture set. Checking is
// strict and per record, since a frozen set must describe itself exactly:
// unknown fields, a missing capture date or fixture id, no results, a
// missing, malformed or repeated tool id, an unknown class hint, a missing or
// null payload and a hint that disagrees with the payload's shape are all
// errors, and a record error names the record by index and tool id.
// (armsio.LoadResultFixtures reads the file.)
func ParseResultFixtures(data []byte) (*ResultFixtureSet, error) {
	var top struct {
		Captured  *string           `json:"captured"`
		FixtureID *string           `json:"fixture_id"`
		Results   []json.RawMessage `json:"results"`
	}
	if err := strictDecode(data, &top); err != nil {
		return nil, fmt.Errorf("parsing result fixtures: %w", err)
	}
	switch {
	case top.Captured == nil || *top.Captured == "":
		return nil, errors.New("parsing result fixtures: \"captured\" is missing or empty")
	case top.FixtureID == nil || *top.FixtureID == "":
		return nil, errors.New("parsing result fixtures: \"fixture_id\" is missing or empty")
	case len(top.Results) == 0:
		return nil, errors.New("parsing result fixtures: \"results\" is missing or empty")
	}
	set := &ResultFixtureSet{Captured: *top.Captured, FixtureID: *top.FixtureID, Results: make([]ResultFixture, 0, len(top.Results))}
	seen := map[string]int{}
	for i, raw := range top.Results {
		fx, err := parseFixture(raw)
		if err != nil {
			if fx.ToolID != "" {
				return nil, fmt.Errorf("parsing result fixtures: results[%d] (tool_id %q): %w", i, fx.ToolID, err)
			}
			return nil, fmt.Errorf("parsing result fixtures: results[%d]: %w", i, err)
		}
		if j, dup := seen[fx.ToolID]; dup {
			return nil, fmt.Errorf("parsing result fixtures: results[%d] (tool_id %q): duplicate tool_id, first used by results[%d]", i, fx.ToolID, j)
		}
		seen[fx.ToolID] = i
		set.Results = append(set.Results, fx)
	}
	return set, nil
}

// parseFixture validates one record. On error the returned fixture carries
// the tool id when one was read, so the caller can name the record.
func parseFixture(raw json.RawMessage) (ResultFixture, error) {
	var rec struct {
		ToolID  *string         `json:"tool_id"`
		Hint    *string         `json:"payload_class_hint"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := strictDecode(raw, &rec); err != nil {
		return ResultFixture{}, err
	}
	var fx ResultFixture
	if rec.ToolID == nil || *rec.ToolID == "" {
		return fx, errors.New("\"tool_id\" is missing or empty")
	}
	fx.ToolID = *rec.ToolID
	if _, _, ok := config.SplitToolID(fx.ToolID); !ok {
		return fx, errors.New("\"tool_id\" must have the form server:tool")
	}
	if rec.Hint == nil {
		return fx, errors.New("\"payload_class_hint\" is missing")
	}
	if *rec.Hint != PayloadClassTabular && *rec.Hint != PayloadClassNonTabular {
		return fx, fmt.Errorf("\"payload_class_hint\" is %q, want %q or %q", *rec.Hint, PayloadClassTabular, PayloadClassNonTabular)
	}
	fx.PayloadClassHint = *rec.Hint
	if len(rec.Payload) == 0 || bytes.Equal(bytes.TrimSpace(rec.Payload), []byte("null")) {
		return fx, errors.New("\"payload\" is missing or null")
	}
	v, err := decodeJSON(rec.Payload)
	if err != nil {
		return fx, fmt.Errorf("\"payload\": %w", err)
	}
	switch tab := isTabular(v); {
	case fx.PayloadClassHint == PayloadClassTabular && !tab:
		if _, isArray := v.([]any); !isArray {
			return fx, fmt.Errorf("hint is %q but the payload is %s, not an array", PayloadClassTabular, jsonKind(v))
		}
		return fx, fmt.Errorf("hint is %q but the payload is not a non-empty array of flat objects with the same keys", PayloadClassTabular)
	case fx.PayloadClassHint == PayloadClassNonTabular && tab:
		return fx, fmt.Errorf("hint is %q but the payload is an array of uniform flat objects, which is %q", PayloadClassNonTabular, PayloadClassTabular)
	}
	fx.Payload = append(json.RawMessage(nil), rec.Payload...)
	return fx, nil
}

// isTabular reports whether v is a non-empty array of flat objects sharing
// one key set.
func isTabular(v any) bool {
	rows, ok := v.([]any)
	if !ok || len(rows) == 0 {
		return false
	}
	var keys map[string]bool
	for _, r := range rows {
		obj, ok := r.(map[string]any)
		if !ok || len(obj) == 0 {
			return false
		}
		for _, f := range obj {
			switch f.(type) {
			case map[string]any, []any:
				return false
			}
		}
		if keys == nil {
			keys = make(map[string]bool, len(obj))
			for k := range obj {
				keys[k] = true
			}
			continue
		}
		if len(obj) != len(keys) {
			return false
		}
		for k := range obj {
			if !keys[k] {
				return false
			}
		}
	}
	return true
}

// strictDecode decodes exactly one JSON value into v, rejecting unknown
// fields and trailing data.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
