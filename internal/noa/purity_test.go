package noa

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbiddenImports are packages that would give the engine I/O, a clock,
// logging or a network: everything the host must supply instead.
var forbiddenImports = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "net": true, "net/http": true, "io/fs": true,
	"io/ioutil": true, "path/filepath": true, "syscall": true, "time": true, "log": true,
	"log/slog": true, "unsafe": true, "runtime": true, "plugin": true, "embed": true,
	"crypto/rand": true, "math/rand": true, "math/rand/v2": true,
}

func TestPackageIsPure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
		checked++
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first := strings.SplitN(path, "/", 2)[0]
			switch {
			case forbiddenImports[path]:
				t.Errorf("%s imports %q: internal/noa must stay pure (no I/O, clock, logging, network, randomness)", f, path)
			case strings.Contains(first, "."):
				t.Errorf("%s imports %q: internal/noa may use the standard library only", f, path)
			}
		}
		full, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && sel.Sel.Name == "Now" {
					t.Errorf("%s: time.Now is forbidden; the host supplies timestamps", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d source files; the glob is wrong", checked)
	}
}
