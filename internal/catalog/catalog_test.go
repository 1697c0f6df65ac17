package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tools lists one tool per name, each described as generation gen.
func tools(gen int, names ...string) []mcp.Tool {
	out := make([]mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, mcp.Tool{Name: n, Description: fmt.Sprintf("gen %d", gen), RawInputSchema: []byte(`{"type":"object"}`)})
	}
	return out
}

func names(s *Snapshot, server string) string {
	var out []string
	for _, t := range s.ServerTools(server) {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

func settle(t *testing.T, c *Catalog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Settle(ctx); err != nil {
		t.Fatalf("Settle: %v", err)
	}
}

// call is one delivery to a subscriber.
type call struct{ prev, next *Snapshot }

// recorder subscribes and keeps every delivery.
type recorder struct {
	mu    sync.Mutex
	calls []call
}

func (r *recorder) fn(prev, next *Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{prev, next})
}

func (r *recorder) all() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func TestSubscriberSeesSnapshotsInOrder(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	defer c.Close()
	rec := &recorder{}
	c.Subscribe("rec", rec.fn)

	c.Update("a", tools(1, "x", "y"))
	settle(t, c)
	c.Update("b", tools(1, "z"))
	settle(t, c)
	c.Update("a", nil) // a went down
	settle(t, c)
	c.Update("b", []mcp.Tool{}) // b is up with no tools
	settle(t, c)

	calls := rec.all()
	if len(calls) != 4 {
		t.Fatalf("got %d deliveries, want 4 (one per settled change)", len(calls))
	}
	var prev uint64
	for i, cl := range calls {
		if cl.prev.Version != prev || cl.next.Version <= prev {
			t.Fatalf("delivery %d: got prev %d next %d, want prev %d and a later next", i, cl.prev.Version, cl.next.Version, prev)
		}
		prev = cl.next.Version
	}
	wantChanged := [][]string{{"a"}, {"b"}, {"a"}, {"b"}}
	for i, cl := range calls {
		if got := cl.next.Changed(cl.prev); !slices.Equal(got, wantChanged[i]) {
			t.Errorf("delivery %d: got changed %v, want %v", i, got, wantChanged[i])
		}
	}
	last := calls[3].next
	if got := last.Servers(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("got servers %v, want [b]", got)
	}
	if got := last.ServerTools("b"); got == nil || len(got) != 0 {
		t.Errorf("got b's tools %#v, want an empty, non-nil list (up, no tools)", got)
	}
	if got := last.ServerTools("a"); got != nil {
		t.Errorf("got a's tools %#v, want nil (down)", got)
	}
	if c.Snapshot() != last {
		t.Error("the catalog's snapshot is not the one last delivered")
	}
}

func TestSameListingPublishesNothing(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	defer c.Close()
	c.Update("a", tools(1, "x"))
	settle(t, c)
	v := c.Snapshot().Version
	c.Update("a", tools(1, "x"))
	c.Update("gone", nil) // never up: nothing to take down
	settle(t, c)
	if got := c.Snapshot().Version; got != v {
		t.Errorf("got version %d after a repeated listing, want %d", got, v)
	}
}

// TestSlowSubscriberSkipsToLatest: while a subscriber is busy, newer
// snapshots replace each other; its next call is with the latest, and
// other subscribers are not held up.
func TestSlowSubscriberSkipsToLatest(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	defer c.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	slow := &recorder{}
	c.Subscribe("slow", func(prev, next *Snapshot) {
		slow.fn(prev, next)
		if next.Version == 1 {
			close(entered)
			<-release
		}
	})
	const last = 50
	fastSaw := make(chan int, last)
	c.Subscribe("fast", func(_, next *Snapshot) {
		if s, ok := next.Server("a"); ok {
			var gen int
			fmt.Sscanf(s.Listed[0].Description, "gen %d", &gen)
			fastSaw <- gen
		}
	})

	c.Update("a", tools(1, "x"))
	<-entered
	// One snapshot per generation: the other subscriber sees each before
	// the next is published, while the slow one is still busy with the
	// first.
	for gen := 2; gen <= last; gen++ {
		c.Update("a", tools(gen, "x"))
		for seen := 0; seen != gen; {
			select {
			case seen = <-fastSaw:
			case <-time.After(10 * time.Second):
				t.Fatalf("the fast subscriber did not see gen %d while the slow one was busy", gen)
			}
		}
	}
	latest := c.Snapshot()
	close(release)
	settle(t, c)

	calls := slow.all()
	if latest.Version < last {
		t.Fatalf("got version %d after %d listings, want one snapshot each", latest.Version, last)
	}
	if len(calls) != 2 {
		t.Fatalf("got %d deliveries to the slow subscriber, want 2 (the first, then the latest)", len(calls))
	}
	if calls[1].prev != calls[0].next || calls[1].next != latest {
		t.Errorf("got second delivery %d -> %d, want %d -> %d", calls[1].prev.Version, calls[1].next.Version, calls[0].next.Version, latest.Version)
	}
}

// TestNoTornSnapshot publishes from one goroutine per server, as the
// upstream supervisors do, while readers check that every entry of every
// snapshot is one listing: each tool of the same generation, the served
// tools those listed. Run with -race, it also shows that snapshots are
// never written once shared.
func TestNoTornSnapshot(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	defer c.Close()
	check := func(s *Snapshot) error {
		for _, name := range s.Servers() {
			e, _ := s.Server(name)
			if len(e.Listed) != 3 || len(e.Tools) != 3 {
				return fmt.Errorf("version %d: %s has %d listed and %d served tools, want 3 and 3", s.Version, name, len(e.Listed), len(e.Tools))
			}
			for i := range e.Listed {
				if e.Listed[i].Description != e.Listed[0].Description || e.Tools[i].Description != e.Listed[0].Description {
					return fmt.Errorf("version %d: %s mixes listings: %q, %q, %q", s.Version, name, e.Listed[0].Description, e.Listed[i].Description, e.Tools[i].Description)
				}
			}
		}
		return nil
	}
	var mu sync.Mutex
	var bad []string
	c.Subscribe("checker", func(_, next *Snapshot) {
		if err := check(next); err != nil {
			mu.Lock()
			bad = append(bad, err.Error())
			mu.Unlock()
		}
	})
	const gens = 200
	servers := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for _, name := range servers {
		wg.Go(func() {
			for gen := 1; gen <= gens; gen++ {
				ts := tools(gen, "t1", "t2", "t3")
				c.Update(name, ts)
				// The publisher reuses its slice: the catalog kept a copy.
				ts[0].Description, ts[0].RawInputSchema[0] = "scribbled", 'X'
			}
		})
	}
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := check(c.Snapshot()); err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
				return
			}
		}
	}()
	wg.Wait()
	settle(t, c)
	close(stop)
	<-readerDone
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("torn snapshots: %v", bad[:min(len(bad), 3)])
	}
	final := c.Snapshot()
	for _, name := range servers {
		e, _ := final.Server(name)
		if got, want := e.Listed[0].Description, fmt.Sprintf("gen %d", gens); got != want {
			t.Errorf("%s: got %q in the final snapshot, want %q (its last listing)", name, got, want)
		}
		if got := string(e.Listed[0].RawInputSchema); got != `{"type":"object"}` {
			t.Errorf("%s: got schema %s, want the one published", name, got)
		}
	}
}

// holder holds the tools it is told to, and counts its reviews.
type holder struct {
	mu      sync.Mutex
	hold    map[string][]string // tool -> reasons
	allowed map[string][]string // server -> allowed it was last handed
	changed chan struct{}
}

func (h *holder) Review(server string, listed []mcp.Tool, allowed []string) map[string][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.allowed[server] = allowed
	out := map[string][]string{}
	for _, t := range listed {
		if r := h.hold[t.Name]; r != nil {
			out[t.Name] = r
		}
	}
	return out
}

func (h *holder) Changed() <-chan struct{} { return h.changed }

func (h *holder) set(hold map[string][]string) {
	h.mu.Lock()
	h.hold = hold
	h.mu.Unlock()
	h.changed <- struct{}{}
}

func TestReviewerHoldsAndReleases(t *testing.T) {
	t.Parallel()
	h := &holder{hold: map[string][]string{"spy": {"its text holds a hidden-instruction tag"}}, allowed: map[string][]string{}, changed: make(chan struct{})}
	c := New(Options{Reviewer: h})
	defer c.Close()
	released := make(chan struct{})
	var once sync.Once
	c.Subscribe("watch", func(_, next *Snapshot) {
		if names(next, "g") == "add,spy" {
			once.Do(func() { close(released) })
		}
	})

	c.Update("g", tools(1, "spy", "add"))
	settle(t, c)
	s := c.Snapshot()
	if got := names(s, "g"); got != "add" {
		t.Errorf("got served %q, want add (spy held)", got)
	}
	if got := s.Held("g", "spy"); !slices.Equal(got, []string{"its text holds a hidden-instruction tag"}) {
		t.Errorf("got spy held for %v, want the reviewer's reason", got)
	}
	if got := s.HeldIDs(); !slices.Equal(got, []string{"g:spy"}) {
		t.Errorf("got held ids %v, want [g:spy]", got)
	}
	if s.Allowed("g", "spy") || !s.Allowed("g", "add") {
		t.Errorf("got allowed spy=%v add=%v, want false and true", s.Allowed("g", "spy"), s.Allowed("g", "add"))
	}
	if _, ok := s.Definition("g", "spy"); ok {
		t.Error("a held tool's definition is offered")
	}
	def, ok := s.Definition("g", "add")
	if !ok || def.Description != "gen 1" {
		t.Fatalf("got add's definition %+v %v, want the listed one", def, ok)
	}
	def.RawInputSchema[0] = 'X' // the caller's copy
	if d, _ := s.Definition("g", "add"); string(d.RawInputSchema) != `{"type":"object"}` {
		t.Errorf("modifying a returned definition changed the snapshot: %s", d.RawInputSchema)
	}

	// The approvals changed: every server is reviewed again.
	h.set(nil)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatalf("got served %q 10s after the release, want add,spy", names(c.Snapshot(), "g"))
	}
	if got := c.Snapshot().HeldIDs(); got != nil {
		t.Errorf("got held ids %v after the release, want none", got)
	}
	h.mu.Lock()
	if got := h.allowed["g"]; !slices.Equal(got, []string{"add"}) {
		t.Errorf("the recheck was handed allowed %v, want [add] (what ran before it)", got)
	}
	h.mu.Unlock()
}

func TestPanicsAreContained(t *testing.T) {
	t.Parallel()
	c := New(Options{Reviewer: panicker{}})
	defer c.Close()
	var got []uint64
	var mu sync.Mutex
	c.Subscribe("flaky", func(_, next *Snapshot) {
		mu.Lock()
		got = append(got, next.Version)
		mu.Unlock()
		if next.Version == 1 {
			panic("subscriber boom")
		}
	})
	c.Update("boom", tools(1, "x")) // the reviewer panics: no snapshot, Settle still returns
	settle(t, c)
	if v := c.Snapshot().Version; v != 0 {
		t.Fatalf("got version %d after a panicking review, want 0", v)
	}
	c.Update("a", tools(1, "x"))
	settle(t, c)
	c.Update("b", tools(1, "x"))
	settle(t, c)
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]uint64{1, 2}, got); diff != "" {
		t.Errorf("deliveries after a panicking one (-want +got):\n%s", diff)
	}
}

type panicker struct{}

func (panicker) Review(server string, _ []mcp.Tool, _ []string) map[string][]string {
	if server == "boom" {
		panic("review boom")
	}
	return nil
}

func (panicker) Changed() <-chan struct{} { return nil }

func TestLateSubscriberAndClose(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	c.Update("a", tools(1, "x"))
	settle(t, c)
	rec := &recorder{}
	c.Subscribe("late", rec.fn)
	settle(t, c)
	if calls := rec.all(); len(calls) != 1 || calls[0].prev.Version != 0 || names(calls[0].next, "a") != "x" {
		t.Fatalf("a late subscriber got %d deliveries, want one with the current snapshot", len(calls))
	}
	c.Close()
	c.Close()
	c.Update("a", nil) // dropped
	c.Subscribe("after", func(_, _ *Snapshot) { t.Error("a subscriber after Close was called") })
	settle(t, c)
	if got := names(c.Snapshot(), "a"); got != "x" {
		t.Errorf("got %q after an Update past Close, want x", got)
	}
}

// A cancelled subscription (a profile removed by a reload) gets nothing
// more, and Settle no longer waits for it; cancelling twice is harmless.
func TestCancelledSubscription(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	defer c.Close()
	rec := &recorder{}
	cancel := c.Subscribe("gone", rec.fn)
	c.Update("a", tools(1, "x"))
	settle(t, c)
	cancel()
	cancel()
	c.Update("a", tools(2, "x"))
	settle(t, c)
	if calls := rec.all(); len(calls) != 1 {
		t.Errorf("a cancelled subscriber got %d deliveries, want 1 (before its cancel)", len(calls))
	}
}

// blocker's reviews wait until it is released.
type blocker struct{ entered, release chan struct{} }

func (b blocker) Review(string, []mcp.Tool, []string) map[string][]string {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return nil
}

func (blocker) Changed() <-chan struct{} { return nil }

// TestUpdateNeverBlocks: the publisher (an upstream supervisor) goes on at
// once while the review (disk I/O) and the subscribers are busy.
func TestUpdateNeverBlocks(t *testing.T) {
	t.Parallel()
	b := blocker{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c := New(Options{Reviewer: b})
	defer c.Close()
	c.Subscribe("stuck", func(_, _ *Snapshot) { <-b.release })
	c.Update("a", tools(0, "x"))
	<-b.entered // the review of the first listing is under way and stuck
	published := make(chan struct{})
	go func() {
		defer close(published)
		for gen := 1; gen <= 100; gen++ {
			c.Update("a", tools(gen, "x"))
		}
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("Update blocked behind a review in progress")
	}
	close(b.release)
	settle(t, c)
	if e, _ := c.Snapshot().Server("a"); e.Listed[0].Description != "gen 100" {
		t.Errorf("got %q once settled, want gen 100", e.Listed[0].Description)
	}
}

// BenchmarkUpdate is what an upstream supervisor pays to publish a
// 50-tool listing: a copy and a wake-up, whatever the review and the
// subscribers then cost on their own goroutines (compare the integrity
// package's BenchmarkReview, which used to run on the supervisor).
func BenchmarkUpdate(b *testing.B) {
	c := New(Options{})
	defer c.Close()
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%02d", i)
	}
	listing := tools(1, names...)
	b.ReportAllocs()
	for b.Loop() {
		c.Update("a", listing)
	}
}
