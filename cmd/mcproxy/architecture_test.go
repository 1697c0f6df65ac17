package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// docPath matches a repository path named in backticks, such as
// `internal/server` or `cmd/mcproxy/wire.go`.
var docPath = regexp.MustCompile("`((?:internal|cmd|bench)(?:/[^`\\s]*)?)`")

// TestArchitectureNamesEveryPackage keeps docs/architecture.md a true map
// of the code (issue 28): every directory of the module holding Go files
// under internal/, cmd/ and bench/ (testdata aside, which Go ignores) must
// be named there in backticks, and every such path the page names must
// still exist.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := testenv.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatalf("reading the architecture page: %v", err)
	}
	named := map[string]bool{}
	for _, m := range docPath.FindAllSubmatch(doc, -1) {
		named[strings.TrimSuffix(string(m[1]), "/")] = true
	}

	var pkgs []string
	for _, top := range []string{"internal", "cmd", "bench"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(d.Name(), ".go") {
				return nil
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(pkgs, rel) {
				pkgs = append(pkgs, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("listing the packages under %s: %v", top, err)
		}
	}
	// Guard against a vacuous pass: the walk must find what surely exists.
	for _, want := range []string{"cmd/mcproxy", "internal/server", "internal/noa", "bench"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("found packages %v, want %s among them", pkgs, want)
		}
	}
	for _, p := range pkgs {
		if !named[p] {
			t.Errorf("docs/architecture.md does not name package %s: add it under Packages as `%s`, with what it owns and must not do", p, p)
		}
	}
	for p := range named {
		if strings.ContainsAny(p, "{*<") {
			continue // a pattern, not a path
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			t.Errorf("docs/architecture.md names %s, which is not in the repository: correct or remove it (%v)", p, err)
		}
	}
}
