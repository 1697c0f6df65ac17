// Package golden compares test output with golden files under a package's
// testdata/ and rewrites them when the tests run with -update, so a change
// to what a package produces shows up as a diff in review. It registers the
// -update flag: a package using it must not define its own. It is imported
// only by _test.go files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ instead of comparing with them")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the file at path (relative to the package
// directory, typically testdata/<name>); with -update it writes got there
// instead, creating the directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from what the code produces (-golden +got); if the change is intended, run the test with -update and review the diff:\n%s", path, diff)
	}
}
