package session

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestNoMCPImports: the host speaks noa's types and its own, so a front
// that has nothing to do with MCP (the LLM gateway) can use it. Neither
// this package nor anything it imports from this module may import mcp-go;
// the MCP glue lives in internal/server.
func TestNoMCPImports(t *testing.T) {
	const module = "github.com/mcproxy/mcproxy/"
	root := testenv.RepoRoot(t)
	seen := map[string]bool{}
	var visit func(pkg string)
	visit = func(pkg string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		for file, imports := range testenv.Imports(t, filepath.Join(root, strings.TrimPrefix(pkg, module))) {
			for _, path := range imports {
				switch {
				case strings.HasPrefix(path, "github.com/mark3labs/mcp-go"):
					t.Errorf("%s/%s imports %s: %s must not depend on mcp-go", pkg, file, path, pkg)
				case strings.HasPrefix(path, module):
					visit(path)
				}
			}
		}
	}
	visit(module + "internal/session")
	if !seen[module+"internal/noa"] {
		t.Errorf("the walk never reached internal/noa; it checked %v", seen)
	}
}
