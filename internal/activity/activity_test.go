package activity

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// entries adds n calls to l, one a minute from start, every third failing.
func entries(l *Log, start time.Time, n int) {
	for i := range n {
		e := Entry{Time: start.Add(time.Duration(i) * time.Minute), Server: "s", Tool: fmt.Sprintf("t%d", i), DurationMS: float64(i + 1)}
		if i%3 == 2 {
			e.Error = "boom"
		}
		l.Add(e)
	}
}

func tools(list []Entry) string {
	var out []string
	for _, e := range list {
		out = append(out, e.Tool)
	}
	return strings.Join(out, " ")
}

func lines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestRetentionBoundsTheFile checks activity.max_entries and
// activity.retention: the file never holds much more than max_entries, and
// what Open, Recent and Read return is the newest within both.
func TestRetentionBoundsTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "activity.jsonl")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	opts := Options{MaxEntries: 8, Now: clock}
	l, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	entries(l, now.Add(-time.Hour), 40)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Trimmed every max_entries/4 appends: at most that many over.
	if n := lines(t, path); n > 8+2 {
		t.Errorf("the file holds %d entries after 40 calls, want at most 10 (activity.max_entries 8, trimmed every 2)", n)
	}
	got, err := Read(path, Filter{}, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "t39 t38 t37 t36 t35 t34 t33 t32"; tools(got) != want {
		t.Errorf("Read: got %q, want %q", tools(got), want)
	}

	// Reopened with a retention of 24 minutes: t36 (24 minutes old) to
	// t39 (21) are kept.
	opts.MaxAge = 24 * time.Minute
	l, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := "t39 t38 t37 t36"; tools(l.Recent(Filter{}, 0)) != want {
		t.Errorf("Recent after reopening with activity.retention 24m: got %q, want %q", tools(l.Recent(Filter{}, 0)), want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lines(t, path); n != 4 {
		t.Errorf("the file holds %d entries after Open trimmed it to activity.retention, want 4", n)
	}
}

// TestAddMasksAndCuts checks that arguments and errors are masked before
// they are kept (in memory and on disk) and cut to MaxText.
func TestAddMasksAndCuts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "activity.jsonl")
	mask := func(s string) string { return strings.ReplaceAll(s, "SECRET", "[redacted]") }
	l, err := Open(path, Options{Mask: mask})
	if err != nil {
		t.Fatal(err)
	}
	l.Add(Entry{Time: time.Now(), Server: "s", Tool: "t", Arguments: `{"k":"SECRET` + strings.Repeat("é", MaxText) + `"}`, Error: "failed with SECRET"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "SECRET") {
		t.Errorf("the file holds the secret: %s", b)
	}
	got, _ := Read(path, Filter{}, 0, Options{})
	if len(got) != 1 {
		t.Fatalf("Read: got %d entries, want 1", len(got))
	}
	e := got[0]
	if e.Error != "failed with [redacted]" {
		t.Errorf("error: got %q, want it masked", e.Error)
	}
	if len(e.Arguments) > MaxText+len("…") || !strings.HasSuffix(e.Arguments, "…") || !strings.HasPrefix(e.Arguments, `{"k":"[redacted]`) {
		t.Errorf("arguments: got %d bytes %q..., want masked and cut to %d bytes", len(e.Arguments), e.Arguments[:min(40, len(e.Arguments))], MaxText)
	}
}

// TestAddMasksLongTextsInPart: of a text far longer than an entry keeps
// (a 5 MB write_file's arguments) only the first maskSpan bytes are
// masked, and the part kept is masked as the whole would be; when masking
// shrinks that span by more than half its margin, nothing of it is kept.
func TestAddMasksLongTextsInPart(t *testing.T) {
	t.Parallel()
	var masked atomic.Int64
	mask := func(s string) string {
		masked.Add(int64(len(s)))
		s = strings.ReplaceAll(s, "SECRET", "[redacted]")
		return strings.ReplaceAll(s, "SHRINK", "")
	}
	l, err := Open(filepath.Join(t.TempDir(), "activity.jsonl"), Options{Mask: mask})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	huge := `{"content":"SECRET ` + strings.Repeat("x", 5<<20) + `"}`
	l.Add(Entry{Time: time.Now(), Server: "s", Tool: "write", Arguments: Excerpt([]byte(huge))})
	if n := masked.Load(); n > maskSpan {
		t.Errorf("masking a %d-byte argument read %d bytes, want at most %d", len(huge), n, maskSpan)
	}
	shrinking := `{"content":"` + strings.Repeat("SHRINK", maskSpan/6) + `SECRET"}`
	l.Add(Entry{Time: time.Now(), Server: "s", Tool: "shrink", Arguments: Excerpt([]byte(shrinking))})
	got := l.Recent(Filter{}, 0)
	if len(got) != 2 {
		t.Fatalf("Recent: got %d entries, want 2", len(got))
	}
	byTool := map[string]string{got[0].Tool: got[0].Arguments, got[1].Tool: got[1].Arguments}
	if a := byTool["write"]; !strings.HasPrefix(a, `{"content":"[redacted] xxx`) || len(a) > MaxText+len("…") {
		t.Errorf("the huge argument: got %.40q (%d bytes), want it masked and cut to %d bytes", a, len(a), MaxText)
	}
	if a := byTool["shrink"]; a != "…" {
		t.Errorf("the argument masking shrank: got %.40q, want nothing of it kept", a)
	}
}

// TestFilters checks each filter of Recent, newest first.
func TestFilters(t *testing.T) {
	t.Parallel()
	l, err := Open(filepath.Join(t.TempDir(), "activity.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	l.Add(Entry{Time: start, Session: "a", Server: "fs", Tool: "read"})
	l.Add(Entry{Time: start.Add(time.Second), Session: "b", Server: "fs", Tool: "write", Error: "denied"})
	l.Add(Entry{Time: start.Add(2 * time.Second), Session: "a", Server: "gh", Tool: "read"})
	for _, tc := range []struct {
		name string
		f    Filter
		n    int
		want string
	}{
		{"all", Filter{}, 0, "read write read"},
		{"limit", Filter{}, 1, "read"},
		{"server", Filter{Server: "fs"}, 0, "write read"},
		{"tool", Filter{Tool: "read"}, 0, "read read"},
		{"session", Filter{Session: "b"}, 0, "write"},
		{"errors", Filter{Errors: true}, 0, "write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tools(l.Recent(tc.f, tc.n)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	s := Summarize(l.Recent(Filter{}, 0))
	if len(s.Servers) != 2 || s.Servers[0] != (Figures{Name: "fs", Calls: 2, Errors: 1}) {
		t.Errorf("Summarize servers: got %+v, want fs with 2 calls and 1 error first", s.Servers)
	}
}

// TestRecentKeepsMaxEntries: in memory too, only the newest max_entries
// calls are kept.
func TestRecentKeepsMaxEntries(t *testing.T) {
	t.Parallel()
	l, err := Open(filepath.Join(t.TempDir(), "activity.jsonl"), Options{MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 7 {
		l.Add(Entry{Time: time.Now(), Server: "s", Tool: fmt.Sprintf("t%d", i)})
		if got := len(l.Recent(Filter{}, 0)); got != min(i+1, 4) {
			t.Fatalf("after %d calls: Recent holds %d, want %d", i+1, got, min(i+1, 4))
		}
	}
	if got := tools(l.Recent(Filter{}, 0)); got != "t6 t5 t4 t3" {
		t.Errorf("got %q, want the newest 4", got)
	}
}
