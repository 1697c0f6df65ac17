package integrity

import (
	"context"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/filelock"
)

// An update of the approvals file waits for its lock (<file>.lock,
// internal/filelock), which `mcproxy tools approve` in another process
// holds while it writes.
func TestStoreUpdateWaitsForTheLock(t *testing.T) {
	t.Parallel()
	s := NewStore(t.TempDir())
	release, err := filelock.Lock(context.Background(), s.Path()+".lock")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Update(func(*Approvals) (bool, error) { return false, nil })
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Update returned (%v) while another holder had the lock", err)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("Update once the lock was released: %v", err)
	}
}
