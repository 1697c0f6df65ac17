package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestLeaf keeps config a leaf of the dependency graph: its non-test files
// import only the standard library and internal/fuzzy, and fuzzy imports
// only the standard library, so every package can import config.
func TestLeaf(t *testing.T) {
	const fuzzy = "github.com/mcproxy/mcproxy/internal/fuzzy"
	tests := []struct {
		dir     string
		allowed map[string]bool
	}{
		{".", map[string]bool{fuzzy: true}},
		{filepath.Join("..", "fuzzy"), nil},
	}
	for _, tc := range tests {
		for name, imports := range testenv.Imports(t, tc.dir) {
			for _, path := range imports {
				first, _, _ := strings.Cut(path, "/")
				if strings.Contains(first, ".") && !tc.allowed[path] {
					t.Errorf("%s/%s imports %s: config and fuzzy must stay leaves (the standard library, and fuzzy for config)", tc.dir, name, path)
				}
			}
		}
	}
}
