package trajectory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBuiltInRuns checks the committed runs: the copy in the binary is
// the one in DefaultDir, each file is the one SOURCES.md lists (by
// SHA-256, so exactly what `mcproxy bench import` writes from the public
// sources), each has its source's licence beside it, and every run loads.
func TestBuiltInRuns(t *testing.T) {
	t.Parallel()
	sources, err := os.ReadFile("SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // file -> sha256
	for _, m := range regexp.MustCompile(`(?m)^    ([0-9a-f]{64})  (\S+`+regexp.QuoteMeta(Ext)+`)$`).FindAllStringSubmatch(string(sources), -1) {
		want[m[2]] = m[1]
	}
	if len(want) != 10 {
		t.Fatalf("SOURCES.md lists %d hashed runs, want 10", len(want))
	}

	st := Open(Options{Getenv: func(string) string { return "" }})
	if st.Dir != BuiltIn {
		t.Fatalf("default store: got %q, want the built-in runs", st.Dir)
	}
	disk := os.DirFS("runs")
	var files []string
	err = fs.WalkDir(st.fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, path)
		built, _ := fs.ReadFile(st.fsys, path)
		onDisk, err := fs.ReadFile(disk, path)
		if err != nil || !bytes.Equal(built, onDisk) {
			t.Errorf("%s: the built-in copy differs from %s (%v)", path, DefaultDir, err)
		}
		if !strings.HasSuffix(path, Ext) {
			return nil
		}
		sum := sha256.Sum256(built)
		if got := hex.EncodeToString(sum[:]); got != want[path] {
			t.Errorf("%s: sha256 %s, SOURCES.md lists %q", path, got, want[path])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, lic := range []string{"LICENSE.gruckion-mini-swe-agent", "LICENSE.SWE-agent-mini-swe-agent", "LICENSE.All-Hands-AI-OpenHands"} {
		if !slices.Contains(files, lic) {
			t.Errorf("%s is missing from %s", lic, filepath.ToSlash(DefaultDir))
		}
	}
	all, err := st.LoadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Errorf("loaded %d runs, want %d", len(all), len(want))
	}
	for _, tr := range all {
		if !strings.Contains(tr.Source, "@") {
			t.Errorf("%s: source %q does not name repository@commit:path", tr.ID, tr.Source)
		}
	}
}
