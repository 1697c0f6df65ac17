package session

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestNewSessionID(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	a, b := NewSessionID(now), NewSessionID(now)
	if a == b {
		t.Errorf("two ids in the same second are equal: %q", a)
	}
	if !ValidSessionID(a) || a[:len("stdio-20260506T070809Z-")] != "stdio-20260506T070809Z-" {
		t.Errorf("got %q, want a valid stdio-<time>-<hex> id", a)
	}
}

// Concurrent first uses of one id open one host; Release and Close end it.
func TestManagerOpensOnce(t *testing.T) {
	m := NewManager(testOptions(t))
	hosts := make(chan *Host, 8)
	for i := 0; i < 8; i++ {
		go func() {
			h, err := m.Host("same")
			if err != nil {
				t.Error(err)
			}
			hosts <- h
		}()
	}
	first := <-hosts
	for i := 1; i < 8; i++ {
		if h := <-hosts; h != first {
			t.Fatalf("got two hosts for one session id")
		}
	}
	if err := m.Release("same"); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Compress(context.Background(), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("released host: got %v, want ErrClosed", err)
	}
	again, err := m.Host("same")
	if err != nil || again == first {
		t.Fatalf("after Release: got %v (same host %v), want a fresh host", err, again == first)
	}
	if _, err := m.Host("../bad"); err == nil {
		t.Errorf("an invalid id opened a host")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Host("other"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v, want ErrClosed", err)
	}
}
