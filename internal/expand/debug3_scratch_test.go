package expand

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestScratchMaxWords(t *testing.T) {
	src := sourceDir(t)
	cs := evalCorpora(t)
	for _, mw := range []int{0, 200000, 100000, 50000, 30000} {
		path := filepath.Join(t.TempDir(), "x.bin")
		start := time.Now()
		st, err := Build(context.Background(), src, path, ConvertOptions{MaxWords: mw})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		start = time.Now()
		v, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		lt := time.Since(start)
		t.Logf("maxwords %d: %d terms, build %s load %s", mw, st.Terms, took, lt)
		for _, c := range cs {
			for _, sp := range []string{"tune", "heldout"} {
				t.Logf("   %s %s %v", c.name, sp, measure(t, c, v, &Options{}, sp))
			}
		}
	}
}
