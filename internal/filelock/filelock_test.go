package filelock

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A held lock makes a second Lock wait until its context ends, with the
// context's cause in the error; once released, it is taken at once.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json.lock")
	release, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("held by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if _, err := Lock(ctx, path); err == nil || !strings.Contains(err.Error(), "held by the test") {
		t.Errorf("a second Lock while held: got %v, want the context's cause", err)
	}
	release()
	again, err := Lock(context.Background(), path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}
