package index

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestWithoutNames(t *testing.T) {
	names := map[string]bool{"get-tickets": true, "variant_searcher": true, "readFile": true, "files.read": true}
	for _, tc := range []struct{ name, in, own, want string }{
		{"a sibling's name goes", "usually from `get-tickets` results", "get-route", "usually from `` results"},
		{"the tool's own name stays", "get-tickets lists tickets", "get-tickets", "get-tickets lists tickets"},
		{"inside a longer identifier it stays", "see get-tickets-v2 and my_variant_searcher", "x", "see get-tickets-v2 and my_variant_searcher"},
		{"every whole occurrence goes", "use variant_searcher; variant_searcher finds variants", "x", "use ;  finds variants"},
		{"next to CJK text", "通常来自get-tickets结果", "x", "通常来自结果"},
		{"camelCase names", "prefer readFile.", "x", "prefer ."},
		{"dotted names", "see files.read, not files.reader", "x", "see , not files.reader"},
		{"no names", "nothing to cut", "x", "nothing to cut"},
	} {
		if got := withoutNames(tc.in, names, tc.own); got != tc.want {
			t.Errorf("%s: withoutNames(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// Only names that cannot be ordinary words are removed: a sibling called
// "search" must not take the word from every description of its server.
func TestSiblingNames(t *testing.T) {
	tools := []config.ToolMetadata{{Name: "search"}, {Name: "get-tickets"}, {Name: "think"}, {Name: "readFile"}, {Name: "list_tables"}}
	got := slices.Sorted(maps.Keys(siblingNames(tools)))
	if want := []string{"get-tickets", "list_tables", "readFile"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A word another tool's name puts in a tool's description does not find the
// tool when SkipSiblingNames is on, and does when it is off.
func TestSkipSiblingNames(t *testing.T) {
	tools := []config.ToolMetadata{
		tool("rail", "get-tickets", "Remaining seats on trains between two stations.", `{"type":"object","properties":{"date":{"type":"string"}}}`),
		tool("rail", "route_stations", "Stops of one train.",
			`{"type":"object","properties":{"train":{"type":"string","description":"Train number, as get-tickets returns it."}}}`),
	}
	for _, skip := range []bool{true, false} {
		f := DefaultFeatures()
		f.SkipSiblingNames = skip
		ix := newIndex(t, Options{Features: &f})
		if err := ix.Upsert("rail", tools); err != nil {
			t.Fatal(err)
		}
		got := ids(mustSearch(t, ix, "tickets", 5))
		want := []string{"rail:get-tickets"}
		if !skip {
			want = append(want, "rail:route_stations")
		}
		if !slices.Equal(got, want) {
			t.Errorf("skip sibling names %v: search tickets got %v, want %v", skip, got, want)
		}
	}
}

// ParamDescriptionsAllField puts parameter descriptions in the combined
// field only; the params field keeps names, titles and enum values.
func TestParamDescriptionsAllField(t *testing.T) {
	m := tool("s", "t", "Does t.", `{"type":"object","properties":{"unit":{"title":"Unit","description":"Temperature scale","enum":["celsius"]}}}`)
	f := DefaultFeatures()
	f.ParamDescriptions = ParamDescriptionsAllField
	doc := document(m, f, nil)
	if got, want := doc[fieldParams], "unit. Unit. celsius"; got != want {
		t.Errorf("params field: got %q, want %q", got, want)
	}
	if all := doc[fieldAll].(string); !strings.Contains(all, "Temperature scale") || !strings.Contains(all, "celsius") {
		t.Errorf("combined field %q: want the description and the enum value", all)
	}
}
