package expand

import (
	"os"
	"testing"
)

func TestConvertPackage(t *testing.T) {
	path := convertedPath(t)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converted in %s: %+v, %d bytes", built.took, built.stats, fi.Size())
	v := vectors(t)
	if got, want := v.Dims(), 100; got != want {
		t.Errorf("got %d dimensions, want %d", got, want)
	}
}
