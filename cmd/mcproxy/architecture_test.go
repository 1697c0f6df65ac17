package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
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
	root, doc := architecturePage(t)
	named := map[string]bool{}
	for _, m := range docPath.FindAllSubmatch(doc, -1) {
		named[strings.TrimSuffix(string(m[1]), "/")] = true
	}

	pkgs := moduleDirs(t, root)
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

// architecturePage is the repository's root and docs/architecture.md.
func architecturePage(t *testing.T) (string, []byte) {
	t.Helper()
	root := testenv.RepoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatalf("reading the architecture page: %v", err)
	}
	return root, doc
}

// moduleDirs lists the module's directories holding Go files under
// internal/, cmd/ and bench/ (testdata and node_modules aside, which Go
// ignores), relative to root with slashes.
func moduleDirs(t *testing.T, root string) []string {
	t.Helper()
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
	return pkgs
}

// docName matches a Go name qualified by its package in backticks, such as
// `server.Server.handleCall`, `largeargs.Liftable` or `noa.Engine.Append`.
var docName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z][A-Za-z0-9]*)(?:\\.([A-Za-z][A-Za-z0-9]*))?`")

// TestArchitectureNamesRealCode keeps the function hops on
// docs/architecture.md true (issue 28): every backticked name of the form
// pkg.Name or pkg.Type.Member whose pkg is one of the module's package
// names must be declared in that package (Member: a method of Type, a
// field of the struct or a method of the interface), unless it is a key of
// the config file written the same way (`noa.mcp`, `gateway.openai.prefix`).
func TestArchitectureNamesRealCode(t *testing.T) {
	root, doc := architecturePage(t)
	decls := map[string][]*packageDecls{} // package name → its packages
	for _, dir := range moduleDirs(t, root) {
		name, pd, err := readDecls(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil {
			t.Fatalf("reading the declarations of %s: %v", dir, err)
		}
		if pd != nil {
			decls[name] = append(decls[name], pd)
		}
	}
	keys := map[string]bool{}
	configKeys(reflect.TypeFor[config.Config](), "", keys)
	checked := 0
	seen := map[string]bool{}
	for _, m := range docName.FindAllSubmatch(doc, -1) {
		pkg, name, member := string(m[1]), string(m[2]), string(m[3])
		pds, ok := decls[pkg]
		if !ok {
			continue
		}
		full := strings.Trim(string(m[0]), "`")
		if !token.IsExported(name) && (keys[full] || member == "" && fileExt[name]) {
			continue // a config key, such as `noa.mcp`, or a file, `noa.go`
		}
		if seen[full] {
			continue
		}
		seen[full] = true
		checked++
		if !slices.ContainsFunc(pds, func(pd *packageDecls) bool { return pd.has(name, member) }) {
			t.Errorf("docs/architecture.md names %s, which the module's package %s does not declare: correct or remove it", full, pkg)
		}
	}
	// Guard against a vacuous pass: the page names dozens of such names.
	if checked < 20 {
		t.Fatalf("checked %d qualified names on the page, want at least 20: is docName still matching?", checked)
	}
}

// fileExt are the extensions of the files the page names (`server.go`,
// `tokens.json`), which read like a package's name.
var fileExt = map[string]bool{"go": true, "json": true, "jsonl": true, "md": true}

// packageDecls is what one package declares: top-level names, and each
// type's methods and fields (a struct's fields, an interface's methods).
type packageDecls struct {
	top     map[string]bool
	members map[string]map[string]bool // type → member
}

func (p *packageDecls) has(name, member string) bool {
	if member == "" {
		return p.top[name]
	}
	return p.members[name][member]
}

func (p *packageDecls) member(typ, name string) {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	p.members[typ][name] = true
}

// readDecls parses the non-test Go files of dir; nil when it holds none.
func readDecls(dir string) (string, *packageDecls, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, err
	}
	var name string
	var pd *packageDecls
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", nil, err
		}
		if pd == nil {
			name, pd = f.Name.Name, &packageDecls{top: map[string]bool{}, members: map[string]map[string]bool{}}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					pd.top[d.Name.Name] = true
					continue
				}
				if typ := receiverType(d.Recv.List[0].Type); typ != "" {
					pd.member(typ, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						pd.top[s.Name.Name] = true
						typeMembers(pd, s)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							pd.top[n.Name] = true
						}
					}
				}
			}
		}
	}
	return name, pd, nil
}

// receiverType is the type name of a method's receiver (T, *T, T[K], *T[K]).
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// typeMembers records a struct's fields (embedded ones under their type's
// name) and an interface's methods.
func typeMembers(pd *packageDecls, s *ast.TypeSpec) {
	var fields *ast.FieldList
	switch t := s.Type.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			pd.member(s.Name.Name, n.Name)
		}
		if len(f.Names) == 0 {
			if typ := receiverType(f.Type); typ != "" {
				pd.member(s.Name.Name, typ)
			} else if sel, ok := f.Type.(*ast.SelectorExpr); ok {
				pd.member(s.Name.Name, sel.Sel.Name)
			}
		}
	}
}

// configKeys adds the dotted JSON key paths of t's fields under prefix to
// keys (`gateway.openai.prefix`), through structs, pointers and maps.
func configKeys(t reflect.Type, prefix string, keys map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Map || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			if f.Anonymous {
				configKeys(f.Type, prefix, keys)
			}
			continue
		}
		key := prefix + name
		if keys[key] {
			continue // a recursive type
		}
		keys[key] = true
		configKeys(f.Type, key+".", keys)
	}
}
