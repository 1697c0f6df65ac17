package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every 10ms until it holds, failing the test, named by
// what, when it still does not after 10 seconds: for a state a test cannot
// be told of, never to order events a channel can.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
