package arms

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

func loadFixtureBytes(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Datasets(t), "result_fixtures_v1.json"))
	if err != nil {
		t.Fatalf("reading result fixtures (set MCPROXY_DATASETS): %v", err)
	}
	return data
}

func TestParseResultFixturesReal(t *testing.T) {
	set, err := ParseResultFixtures(loadFixtureBytes(t))
	if err != nil {
		t.Fatalf("ParseResultFixtures: %v", err)
	}
	if set.FixtureID != "result_fixtures_v1" || set.Captured == "" {
		t.Errorf("got fixture_id %q captured %q, want result_fixtures_v1 and a date", set.FixtureID, set.Captured)
	}
	if len(set.Results) != 6 {
		t.Fatalf("got %d results, want 6", len(set.Results))
	}
	classes := map[string]int{}
	for _, r := range set.Results {
		classes[r.PayloadClassHint]++
	}
	if classes[PayloadClassTabular] != 2 || classes[PayloadClassNonTabular] != 4 {
		t.Errorf("got classes %v, want 2 tabular and 4 non_tabular", classes)
	}
}

// TestParseResultFixturesRejects mutates one record of the real fixture file
// at a time; every kind of bad record must fail with an error naming it.
func TestParseResultFixturesRejects(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(doc map[string]any, rec map[string]any)
		wantErr string
	}{
		{"missing tool_id", func(_, r map[string]any) { delete(r, "tool_id") }, `results[3]: "tool_id" is missing`},
		{"empty tool_id", func(_, r map[string]any) { r["tool_id"] = "" }, `results[3]: "tool_id" is missing or empty`},
		{"tool_id without server", func(_, r map[string]any) { r["tool_id"] = "list_tables" }, `results[3] (tool_id "list_tables"): "tool_id" must have the form server:tool`},
		{"duplicate tool_id", func(_, r map[string]any) { r["tool_id"] = "fetch:fetch" }, `results[3] (tool_id "fetch:fetch"): duplicate tool_id, first used by results[0]`},
		{"unknown hint", func(_, r map[string]any) { r["payload_class_hint"] = "table" }, `results[3] (tool_id "sqlite:list_tables"): "payload_class_hint" is "table"`},
		{"missing hint", func(_, r map[string]any) { delete(r, "payload_class_hint") }, `results[3] (tool_id "sqlite:list_tables"): "payload_class_hint" is missing`},
		{"missing payload", func(_, r map[string]any) { delete(r, "payload") }, `results[3] (tool_id "sqlite:list_tables"): "payload" is missing or null`},
		{"null payload", func(_, r map[string]any) { r["payload"] = nil }, `results[3] (tool_id "sqlite:list_tables"): "payload" is missing or null`},
		{"tabular hint on a string", func(_, r map[string]any) { r["payload"] = "servers" }, `results[3] (tool_id "sqlite:list_tables"): hint is "tabular" but the payload is a string, not an array`},
		{"tabular hint on ragged rows", func(_, r map[string]any) {
			r["payload"] = []any{map[string]any{"a": 1}, map[string]any{"b": 2}}
		}, `results[3] (tool_id "sqlite:list_tables"): hint is "tabular" but the payload is not a non-empty array of flat objects`},
		{"tabular hint on nested rows", func(_, r map[string]any) {
			r["payload"] = []any{map[string]any{"a": []any{1}}}
		}, `hint is "tabular" but the payload is not`},
		{"non_tabular hint on a table", func(_, r map[string]any) { r["payload_class_hint"] = "non_tabular" }, `results[3] (tool_id "sqlite:list_tables"): hint is "non_tabular" but the payload is an array of uniform flat objects`},
		{"unknown record field", func(_, r map[string]any) { r["extra"] = 1 }, `results[3]: json: unknown field "extra"`},
		{"unknown top-level field", func(d, _ map[string]any) { d["version"] = 2 }, `unknown field "version"`},
		{"missing fixture_id", func(d, _ map[string]any) { delete(d, "fixture_id") }, `"fixture_id" is missing or empty`},
		{"missing captured", func(d, _ map[string]any) { d["captured"] = "" }, `"captured" is missing or empty`},
		{"no results", func(d, _ map[string]any) { d["results"] = []any{} }, `"results" is missing or empty`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(loadFixtureBytes(t), &doc); err != nil {
				t.Fatal(err)
			}
			rec := doc["results"].([]any)[3].(map[string]any)
			if rec["tool_id"] != "sqlite:list_tables" {
				t.Fatalf("results[3] is %v, the test expects sqlite:list_tables", rec["tool_id"])
			}
			tc.mutate(doc, rec)
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseResultFixtures(data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseResultFixturesRejectsBadDocuments(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"captured":"x","fixture_id":"y","results":[{"tool_id":"a:b"`, `{"captured":"x","fixture_id":"y","results":[]} {}`} {
		if _, err := ParseResultFixtures([]byte(in)); err == nil {
			t.Errorf("ParseResultFixtures(%q): got nil, want an error", in)
		}
	}
}

func TestIsTabular(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`[{"a":1,"b":"x"},{"b":"y","a":2}]`, true},
		{`[{"a":null}]`, true},
		{`[]`, false},
		{`[{}]`, false},
		{`[{"a":1},{"a":1,"b":2}]`, false},
		{`[{"a":{"b":1}}]`, false},
		{`[1,2]`, false},
		{`{"a":1}`, false},
		{`"text"`, false},
	}
	for _, tc := range tests {
		v, err := decodeJSON([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if got := isTabular(v); got != tc.want {
			t.Errorf("isTabular(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
