package index

import (
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestDeprecatedMarker(t *testing.T) {
	for _, tc := range []struct {
		desc string
		want bool
	}{
		{"Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.", true},
		{"Deprecated: use search_v2.", true},
		{"[deprecated] Lists repositories.", true},
		{"⚠️ Deprecated. Kept for old clients.", true},
		{"Runs a query. Deprecated, please use run_sql instead.", true},
		{"Sends mail. Deprecated in favour of send_message.", true},
		{"Gets the user. This tool is deprecated and will be removed.", true},
		{"Check if packages are deprecated", false},
		{"List deprecated APIs in the project and suggest replacements.", false},
		{"Read a file.", false},
		{"", false},
	} {
		if got := deprecated(tc.desc); got != tc.want {
			t.Errorf("deprecated(%q) = %v, want %v", tc.desc, got, tc.want)
		}
	}
}

// A deprecated tool ranks below the tool its server recommends, even when
// it matches the query better, also when only one hit is asked for; its
// exact name still finds it first; an on-disk index remembers which tools
// are deprecated.
func TestDeprecatedDemoted(t *testing.T) {
	tools := []config.ToolMetadata{
		tool("fs", "read_file", "Read a file. DEPRECATED: Use read_text_file instead.", ""),
		tool("fs", "read_text_file", "Read the complete contents of a file from the file system as text, with optional head and tail line counts.", ""),
		tool("npm", "npmDeprecated", "Check if packages are deprecated", ""),
	}
	dir := filepath.Join(t.TempDir(), "index")
	check := func(t *testing.T, ix *Index) {
		t.Helper()
		if hits := mustSearch(t, ix, "read a file", 1); len(hits) != 1 || hits[0].ID != "fs:read_text_file" {
			t.Errorf("read a file, limit 1: got %v, want fs:read_text_file", ids(hits))
		}
		if hits := mustSearch(t, ix, "read_file", 2); len(hits) == 0 || hits[0].ID != "fs:read_file" {
			t.Errorf("read_file by name: got %v, want fs:read_file first", ids(hits))
		}
		if hits := mustSearch(t, ix, "which packages are deprecated", 1); len(hits) != 1 || hits[0].ID != "npm:npmDeprecated" {
			t.Errorf("a tool about deprecation: got %v, want npm:npmDeprecated", ids(hits))
		}
	}
	ix, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	load(t, ix, tools)
	// Without the demotion the deprecated tool, the shorter match, leads.
	f := DefaultFeatures()
	f.DeprecatedWeight = 1
	plain := newIndex(t, Options{Features: &f})
	load(t, plain, tools)
	if hits := mustSearch(t, plain, "read a file", 1); len(hits) != 1 || hits[0].ID != "fs:read_file" {
		t.Fatalf("without demotion: got %v, want fs:read_file (else this test shows nothing)", ids(hits))
	}
	check(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	check(t, newIndex(t, Options{Dir: dir}))
}
