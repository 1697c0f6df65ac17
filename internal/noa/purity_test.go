package noa

import (
	"fmt"
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

// impurities lists the forbidden imports and time.Now uses in one file.
func impurities(fset *token.FileSet, name string, src []byte) ([]string, error) {
	file, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		first := strings.SplitN(path, "/", 2)[0]
		switch {
		case forbiddenImports[path]:
			out = append(out, fmt.Sprintf("%s imports %q: internal/noa must stay pure (no I/O, clock, logging, network, randomness)", name, path))
		case strings.Contains(first, "."):
			out = append(out, fmt.Sprintf("%s imports %q: internal/noa may use the standard library only", name, path))
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && sel.Sel.Name == "Now" {
				out = append(out, fmt.Sprintf("%s: time.Now is forbidden; the host supplies timestamps", fset.Position(sel.Pos())))
			}
		}
		return true
	})
	return out, nil
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
		bad, err := impurities(fset, f, src)
		if err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
		for _, b := range bad {
			t.Error(b)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked only %d source files; the glob is wrong", checked)
	}
}

// The checker itself must catch what it is meant to catch.
func TestPurityCheckerCatchesViolations(t *testing.T) {
	src := []byte(`package noa
import (
	"os"
	"net/http"
	"go.uber.org/zap"
	t2 "time"
	"strings"
)
var _ = os.Getenv
var _ = http.Get
var _ = zap.NewNop
var _ = strings.ToLower
func f() { _ = time.Now() ; _ = t2.Second }
`)
	bad, err := impurities(token.NewFileSet(), "bad.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 5 {
		t.Errorf("got %d findings, want 5 (os, net/http, zap, time, time.Now):\n%s", len(bad), strings.Join(bad, "\n"))
	}
}
