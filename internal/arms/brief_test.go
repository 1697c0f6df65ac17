package arms

import (
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestBriefDescription(t *testing.T) {
	long := strings.Repeat("word ", 60)
	for _, tc := range []struct{ name, in, want string }{
		{"short stays whole", "Read a file. Only inside allowed directories.", "Read a file. Only inside allowed directories."},
		{"first paragraph only", "Fetch a URL.\n\nAlthough originally you did not have internet access...", "Fetch a URL."},
		{"lines joined", "List files\nin a folder", "List files in a folder"},
		{"whole sentences that fit", "Create a directory. " + strings.Repeat("Then say more about it. ", 10), "Create a directory. " + strings.TrimSpace(strings.Repeat("Then say more about it. ", 7))},
		{"abbreviation is no sentence end", "Search, e.g. by name. " + long, "Search, e.g. by name."},
		{"one long sentence cut at a word", long, strings.TrimSpace(strings.Repeat("word ", 40)) + "…"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := briefDescription(tc.in)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if n := len([]rune(got)); n > briefMaxDescription+1 {
				t.Errorf("got %d characters, want at most %d and the mark", n, briefMaxDescription)
			}
		})
	}
}

// Enums longer than briefMaxEnum show their first literals; the index still
// gets the full schema.
func TestBriefEnumsAndIndex(t *testing.T) {
	tool := config.Tool{ID: "s:t", Server: "s", Name: "t", Description: "Sort things.",
		Schema: []byte(`{"type":"object","properties":{"by":{"enum":["a","b","c","d","e","f"]},"dir":{"enum":["asc","desc"]}},"required":["by"]}`)}
	got, err := NewBrief().EncodeTool(tool)
	if err != nil {
		t.Fatal(err)
	}
	if want := `s:t(by:"a"|"b"|"c"|"d"|…, dir?:"asc"|"desc")|Sort things.`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	md, err := NewBrief().EncodeIndexMetadata(tool)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := BaselineMetadata(tool)
	if md != base {
		t.Errorf("index metadata %+v, want the baseline's %+v", md, base)
	}
}
