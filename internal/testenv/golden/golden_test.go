package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCheckAndUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "x.golden")
	*update = true
	Check(t, path, []byte("one\n"))
	*update = false
	if data, err := os.ReadFile(path); err != nil || string(data) != "one\n" {
		t.Fatalf("after -update: got %q, %v; want the file written", data, err)
	}
	Check(t, path, []byte("one\n"))

	// A difference fails the check; run it in a throwaway test.
	ft := &testing.T{}
	done := make(chan bool)
	go func() {
		defer close(done)
		Check(ft, path, []byte("two\n"))
	}()
	<-done
	if !ft.Failed() {
		t.Error("a differing output passed the check")
	}
}
