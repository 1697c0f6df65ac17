package session

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// lockFree reports whether session id's lock can be taken now (no host
// holds its files open).
func lockFree(t *testing.T, dir, id string) bool {
	t.Helper()
	l, err := lockSession(dir+"/"+id, id)
	var inUse *InUseError
	if errors.As(err, &inUse) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = l.release()
	return true
}

// A Manager keeps the files of at most MaxOpen hosts open: the least
// recently written are parked (lock dropped, transcript closed) and come
// back on their next write with nothing lost.
func TestManagerParksBeyondMaxOpen(t *testing.T) {
	opts := testOptions(t)
	opts.MaxOpen = 2
	m := NewManager(opts)
	defer m.Close()
	ids := []string{"s1", "s2", "s3", "s4", "s5"}
	hosts := map[string]*Host{}
	for _, id := range ids {
		h, err := m.Host(id)
		if err != nil {
			t.Fatal(err)
		}
		hosts[id] = h
		call(t, h, "fs:read", "contents of "+id)
	}
	freeOf := func() (free []string) {
		for _, id := range ids {
			if lockFree(t, opts.Dir, id) {
				free = append(free, id)
			}
		}
		return free
	}
	waitFree := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for fmt.Sprint(freeOf()) != want {
			if time.Now().After(deadline) {
				t.Fatalf("sessions with their files closed: %v, want %s", freeOf(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFree("[s1 s2 s3]")

	// A parked host answers from memory and records again.
	before := len(hosts["s1"].Messages())
	call(t, hosts["s1"], "fs:read", "more of s1")
	if got := len(hosts["s1"].Messages()); got != before+2 {
		t.Fatalf("s1 after a write while parked: %d messages, want %d", got, before+2)
	}
	waitFree("[s2 s3 s4]")

	// Another writer changed s2's transcript while it was parked: s2
	// refuses to write over it.
	other, err := Open(opts, "s2")
	if err != nil {
		t.Fatalf("taking a parked session from another opener: %v", err)
	}
	call(t, other, "fs:read", "written elsewhere")
	other.Close()
	if _, err := hosts["s2"].Record(t.Context(), toolCall("fs:read", nil)); err == nil {
		t.Fatal("a parked host wrote over a transcript another process changed")
	}

	// Everything written is there after the manager closes.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	h := openHost(t, opts, "s1")
	if got := len(h.Messages()); got != before+2 {
		t.Errorf("s1 reopened: %d messages, want %d", got, before+2)
	}
}
