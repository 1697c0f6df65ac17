package index

import (
	"strings"
	"testing"
)

func TestParamsText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"compact signature", "path:string, edits:{oldText:string, newText:string}[], dryRun?:boolean",
			"path:, edits:{oldText:, newText:}[], dryRun?:"},
		{"a parameter named like a type keeps its name", "number:integer, count?:number", "number:, count?:"},
		{"enum values stay", `location:"New York"|"Chicago", unit?:"celsius"|"fahrenheit"`,
			`location:"New York"|"Chicago", unit?:"celsius"|"fahrenheit"`},
		{"type lines of a rendered schema", "city:\n  type: string\n  description: City name", "city:\n  type:\n  description: City name"},
		{"a type name inside prose stays", "pass a string or an array of strings", "pass a string or an array of strings"},
		{"JSON Schema", `{"type":"object","properties":{"path":{"type":"string","description":"File to read"}}}`,
			"path. File to read."},
	} {
		if got := paramsText(tc.in); got != tc.want {
			t.Errorf("%s: paramsText(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// Without descriptions, a property keeps its name, title and enum values.
func TestParamsWordsWithoutDescriptions(t *testing.T) {
	schema := `{"type":"object","properties":{"sort":{"title":"Sort order","description":"How results are ordered","enum":["asc","desc"]}}}`
	if got, want := paramsWords(schema, nil), "sort. Sort order. asc desc"; got != want {
		t.Errorf("paramsWords(descriptions off) = %q, want %q", got, want)
	}
	if got := paramsWords(schema, asIs); !strings.Contains(got, "How results are ordered") {
		t.Errorf("paramsWords(descriptions on) = %q, want the description kept", got)
	}
}
