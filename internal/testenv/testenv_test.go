package testenv

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does, so the failure paths can be checked.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine and returns the result
// and the fatal message, if any.
func run(t *testing.T, f func(testing.TB) string) (got, fatal string) {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = f(r)
	}()
	<-done
	return got, r.fatal
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("got root %s without go.mod: %v", root, err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wd, filepath.Join(root, "internal", "testenv"); got != want {
		t.Errorf("got working directory %s, want %s below the root", got, want)
	}
}

func TestRepoRootOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	_, fatal := run(t, RepoRoot)
	if !strings.Contains(fatal, "no go.mod in") {
		t.Errorf("got fatal %q, want it to say no go.mod was found", fatal)
	}
}

func TestDatasets(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	tests := []struct {
		name, env, want, wantFatal string
	}{
		{name: "override", env: dir, want: dir},
		{name: "override missing", env: missing, wantFatal: DatasetsEnv + "=" + missing + " is not usable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(DatasetsEnv, tc.env)
			got, fatal := run(t, Datasets)
			if tc.wantFatal != "" {
				if !strings.Contains(fatal, tc.wantFatal) {
					t.Errorf("got fatal %q, want it to contain %q", fatal, tc.wantFatal)
				}
				return
			}
			if fatal != "" || got != tc.want {
				t.Errorf("got %q (fatal %q), want %q", got, fatal, tc.want)
			}
		})
	}
}

func TestDatasetsDefault(t *testing.T) {
	t.Setenv(DatasetsEnv, "")
	got, fatal := run(t, Datasets)
	want := filepath.Join(RepoRoot(t), "bench", "datasets")
	if fatal != "" || got != want {
		t.Errorf("got %q (fatal %q), want %q", got, fatal, want)
	}
}

func TestNodeMissingPieces(t *testing.T) {
	// The failure messages, as where npm ci has run; the skip that a clone
	// without node_modules gets is TestNPMMissingSkipsUnlessRequired's.
	t.Setenv(RequireNPMEnv, "1")
	tests := []struct {
		name string
		f    func(testing.TB) string
	}{
		{"bin", func(t testing.TB) string { return NodeBin(t, "no-such-bin-mcproxy") }},
		{"package", func(t testing.TB) string { return NodePackage(t, "no-such-package-mcproxy", "") }},
		{"package version", func(t testing.TB) string { return NodePackage(t, "@toon-format/toon", "0.0.0-never") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fatal := run(t, tc.f)
			if !strings.Contains(fatal, "run npm ci in the repo root") {
				t.Errorf("got fatal %q, want it to say run npm ci in the repo root", fatal)
			}
		})
	}
}

func TestNodeInstalled(t *testing.T) {
	if got := Node(t); !filepath.IsAbs(got) && !strings.Contains(got, string(filepath.Separator)) {
		t.Errorf("got node %q, want a path", got)
	}
	bin := NodeBin(t, "mcp-server-everything")
	if got, want := filepath.Dir(bin), filepath.Join(NodeModules(t), ".bin"); got != want {
		t.Errorf("got %s in %s, want it in %s", bin, got, want)
	}
	dir := NodePackage(t, "@toon-format/toon", "2.3.1")
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Errorf("got package directory %s without package.json: %v", dir, err)
	}
}

func TestNodeScript(t *testing.T) {
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo.mjs")
	fail := filepath.Join(dir, "fail.mjs")
	for name, src := range map[string]string{
		echo: "process.stdin.pipe(process.stdout);\n",
		fail: "console.error('broken on purpose'); process.exit(3);\n",
	} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := string(NodeScript(t, echo, strings.NewReader("one\ntwo\n"))); got != "one\ntwo\n" {
		t.Errorf("got %q from the echo script, want its input back", got)
	}
	_, fatal := run(t, func(t testing.TB) string { return string(NodeScript(t, fail, strings.NewReader(""))) })
	if !strings.Contains(fatal, "running node "+fail) || !strings.Contains(fatal, "broken on purpose") {
		t.Errorf("got fatal %q, want the script's name and its stderr", fatal)
	}
}

func TestImports(t *testing.T) {
	files := Imports(t, ".")
	got, ok := files["testenv.go"]
	if !ok {
		t.Fatalf("got files %v, want testenv.go among them", files)
	}
	if !slices.Contains(got, "go/parser") || !slices.Contains(got, "testing") {
		t.Errorf("got imports %v for testenv.go, want go/parser and testing among them", got)
	}
	if _, ok := files["testenv_test.go"]; ok {
		t.Errorf("got testenv_test.go in %v, want test files left out", files)
	}
	_, fatal := run(t, func(t testing.TB) string { Imports(t, t.TempDir()); return "" })
	if !strings.Contains(fatal, "no non-test Go files") {
		t.Errorf("got fatal %q for an empty directory, want it to say there are no files", fatal)
	}
}

// TestOnlyTestsImportTestenv keeps testenv out of the product: only _test.go
// files may import it.
func TestOnlyTestsImportTestenv(t *testing.T) {
	const self = "github.com/mcproxy/mcproxy/internal/testenv"
	root := RepoRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if rel, _ := filepath.Rel(root, path); strings.HasPrefix(filepath.ToSlash(rel), "internal/testenv/") {
			return nil // test support itself, such as testenv/corpora
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self || strings.HasPrefix(p, self+"/") {
				t.Errorf("%s imports %s: got a product file importing it, want only _test.go files", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("got no Go files under %s, want the module's sources", root)
	}
}

// TestNPMMissingSkipsUnlessRequired: on a checkout without node_modules a
// test that needs an npm package is skipped with the fix (npm ci), and with
// MCPROXY_REQUIRE_NPM set (scripts/test, CI) it fails instead.
func TestNPMMissingSkipsUnlessRequired(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("TESTENV_NPM_CHILD") != "" {
		t.Chdir(dir)
		NodeBin(t, "mcp-server-everything")
		return
	}
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNPMMissingSkipsUnlessRequired$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_NPM_CHILD=1", RequireNPMEnv+"="+require)
		out, err := cmd.CombinedOutput()
		switch {
		case require == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "run npm ci")):
			t.Errorf("without %s: want a skip that says to run npm ci, got (%v):\n%s", RequireNPMEnv, err, out)
		case require != "" && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "run npm ci")):
			t.Errorf("with %s=1: want a failure that says to run npm ci, got (%v):\n%s", RequireNPMEnv, err, out)
		}
	}
}
