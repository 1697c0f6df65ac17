package session

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// age sets the modification time of a session directory and everything
// directly in it.
func age(t *testing.T, dir string, at time.Time) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Chtimes(filepath.Join(dir, e.Name()), at, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(dir, at, at); err != nil {
		t.Fatal(err)
	}
}

// fakeClock is a settable Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func idsOf(p []Pruned) []string {
	var out []string
	for _, x := range p {
		out = append(out, x.ID)
	}
	slices.Sort(out)
	return out
}

// Prune removes the sessions untouched for the period, and never one an
// open host holds, in this process or another; a dry run removes nothing.
func TestPrune(t *testing.T) {
	opts := testOptions(t)
	now := time.Now()
	clock := &fakeClock{t: now.Add(40 * 24 * time.Hour)}
	opts.Now = clock.now
	for _, id := range []string{"old", "recent", "open-here"} {
		h := openHost(t, opts, id)
		call(t, h, "fs:read", "some text")
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	age(t, filepath.Join(opts.Dir, "recent"), clock.now().Add(-24*time.Hour))
	held := openHost(t, opts, "open-here")
	// Another process holds "held" (created old: the clock is 40 days on).
	cmd, first := startChild(t, envLockHolderDir+"="+opts.Dir)
	if first != "HELD "+strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("holder said %q", first)
	}
	size, _ := dirSize(filepath.Join(opts.Dir, "old"))

	rep, err := Prune(opts, 30*24*time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.InUse)
	if got := idsOf(rep.Removed); !slices.Equal(got, []string{"old"}) || rep.Bytes != size || !slices.Equal(rep.InUse, []string{"held", "open-here"}) {
		t.Fatalf("dry run: would remove %v (%d bytes), in use %v; want [old] (%d bytes), in use [held open-here]", got, rep.Bytes, rep.InUse, size)
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "old", TranscriptFile)); err != nil {
		t.Fatalf("the dry run removed something: %v", err)
	}
	rep, err = Prune(opts, 30*24*time.Hour, false)
	if err != nil || len(rep.Errors) > 0 {
		t.Fatal(err, rep.Errors)
	}
	if got := idsOf(rep.Removed); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("removed %v, want [old]", got)
	}
	for id, want := range map[string]bool{"old": false, "recent": true, "open-here": true, "held": true} {
		if _, err := os.Stat(filepath.Join(opts.Dir, id)); (err == nil) != want {
			t.Errorf("session %s: present %v, want %v", id, err == nil, want)
		}
	}
	// The open host still records.
	call(t, held, "fs:read", "more")
	if _, err := Prune(opts, 0, false); err == nil {
		t.Errorf("Prune with a zero age: no error")
	}
}

// A Manager with a retention period prunes when it starts and then on its
// interval, never the hosts it holds open, and Close stops it.
func TestManagerRetention(t *testing.T) {
	opts := testOptions(t)
	start := time.Now()
	clock := &fakeClock{t: start}
	opts.Now = clock.now
	for _, id := range []string{"a", "b"} {
		h := openHost(t, opts, id)
		call(t, h, "fs:read", "text")
		h.Close()
	}
	age(t, filepath.Join(opts.Dir, "a"), start.Add(-31*24*time.Hour))
	reports := make(chan PruneReport, 16)
	opts.Retention = 30 * 24 * time.Hour
	opts.OnPrune = func(r PruneReport) { reports <- r }
	opts.pruneEvery = 20 * time.Millisecond
	m := NewManager(opts)
	first := <-reports
	if got := idsOf(first.Removed); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("the start-up prune removed %v, want [a]", got)
	}
	open, err := m.Host("open")
	if err != nil {
		t.Fatal(err)
	}
	call(t, open, "fs:read", "text")
	// A month and a half later, both b and the open session are old.
	clock.set(start.Add(45 * 24 * time.Hour))
	var removed []string
	for deadline := time.After(30 * time.Second); len(removed) == 0; {
		select {
		case r := <-reports:
			removed = idsOf(r.Removed)
			if len(removed) > 0 && !slices.Contains(r.InUse, "open") {
				t.Errorf("the open session was not reported in use: %+v", r)
			}
		case <-deadline:
			t.Fatal("no later prune removed anything")
		}
	}
	if !slices.Equal(removed, []string{"b"}) {
		t.Fatalf("a later prune removed %v, want [b]", removed)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for len(reports) > 0 {
		<-reports
	}
	time.Sleep(100 * time.Millisecond)
	if len(reports) > 0 {
		t.Errorf("the Manager still pruned after Close")
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "open", TranscriptFile)); err != nil {
		t.Errorf("the session the Manager held open was removed: %v", err)
	}
}
