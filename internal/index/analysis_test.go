package index

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitIdentifier(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"read", []string{"read"}},
		{"read_text_file", []string{"read", "text", "file"}},
		{"readTextFile", []string{"read", "Text", "File"}},
		{"ReadTextFile", []string{"Read", "Text", "File"}},
		{"read-text-file", []string{"read", "text", "file"}},
		{"fs.read.text", []string{"fs", "read", "text"}},
		{"getHTMLPage", []string{"get", "HTML", "Page"}},
		{"HTMLParser", []string{"HTML", "Parser"}},
		{"HTML", []string{"HTML"}},
		{"git_diff_v2", []string{"git", "diff", "v2"}},
		{"base64Encode", []string{"base64", "Encode"}},
		{"__private__", []string{"private"}},
		{"a__b", []string{"a", "b"}},
		{"sequentialthinking", []string{"sequentialthinking"}},
		{"créerFichier", []string{"créer", "Fichier"}},
		{"AB", []string{"AB"}},
		{"aB", []string{"a", "B"}},
		{"", nil},
		{"___", nil},
	}
	for _, tc := range tests {
		var got []string
		for _, p := range splitIdentifier([]byte(tc.in)) {
			got = append(got, tc.in[p[0]:p[1]])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("splitIdentifier(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}
