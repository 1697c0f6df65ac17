//go:build unix

package upstream

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A stdio server that prints to stdout still works, and what it printed is
// logged (rate-limited) instead of vanishing (issue 16).
func TestNoisyStdoutIsLogged(t *testing.T) {
	log, logs := observed()
	sc, _ := peerServer(t, "noisy")
	m := startManager(t, map[string]config.ServerConfig{"noisy": sc}, Options{Logger: log})
	if got := text(call(t, m, "noisy", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Fatalf("got %q, want echo: hi", got)
	}
	var lines []string
	for _, e := range logs.FilterMessageSnippet("not JSON-RPC; dropped").All() {
		lines = append(lines, e.ContextMap()["line"].(string))
	}
	want := []string{"peer banner line 1", "peer banner line 2", "peer banner line 3", "peer banner line 4", "peer banner line 5"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("logged lines %q, want %q (the first %d, then counted)", lines, want, noiseBurst)
	}
}

func TestStdoutFilter(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 200<<10) + `"}}`
	in := "banner\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n\n   \n" + `{"level":"info"}` + "\n" + long + "\n" + strings.Repeat("y", 100<<10) + "\n" + `{"jsonrpc":"2.0","id":2}`
	log, logs := observed()
	f := newStdoutFilter(strings.NewReader(in), log)
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","method":"n"}` + "\n" + long + "\n" + `{"jsonrpc":"2.0","id":2}`
	if string(out) != want {
		t.Errorf("passed %d bytes, want %d (the JSON-RPC lines only, the long one whole)", len(out), len(want))
	}
	var got []string
	for _, e := range logs.All() {
		got = append(got, e.ContextMap()["line"].(string))
	}
	if len(got) != 3 || got[0] != "banner" || got[1] != `{"level":"info"}` || !strings.HasSuffix(got[2], "...") || len(got[2]) != maxNoiseLine+3 {
		t.Errorf("logged %q, want banner, the JSON log line and the long garbage line cut to %d bytes", got, maxNoiseLine)
	}
	// mcp-go reads lines with a bufio.Reader: it must see the same lines.
	r := bufio.NewReader(newStdoutFilter(strings.NewReader(in), zap.NewNop()))
	if l, _ := r.ReadString('\n'); l != `{"jsonrpc":"2.0","method":"n"}`+"\n" {
		t.Errorf("first line %q", l)
	}
}

func TestNoiseLogRateLimit(t *testing.T) {
	log, logs := observed()
	now := time.Unix(1000, 0)
	n := &noiseLog{log: log, now: func() time.Time { return now }}
	for range 12 {
		n.dropped([]byte("junk"))
	}
	if got := logs.Len(); got != noiseBurst {
		t.Fatalf("logged %d lines in one window, want %d", got, noiseBurst)
	}
	now = now.Add(noiseWindow)
	n.dropped([]byte("junk"))
	summary := logs.FilterMessageSnippet("more lines").All()
	if len(summary) != 1 || summary[0].ContextMap()["lines"].(int64) != 7 {
		t.Fatalf("got %v, want one summary counting 7 suppressed lines", summary)
	}
	if got := logs.Len(); got != noiseBurst+2 {
		t.Errorf("got %d entries, want %d (a new window logs again)", got, noiseBurst+2)
	}
}

// The filter bounds every line, passed or dropped, at limit bytes (the
// newline not counted) and tells tooLarge once.
func TestStdoutFilterBound(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1}`
	limit := int64(len(ok))
	for _, tc := range []struct {
		name, in string
		limit    int64
		want     string // what passes before the error
		tooLarge bool
	}{
		{"at the limit", ok + "\n" + ok, limit, ok + "\n" + ok, false},
		{"JSON over the limit", ok + "\n" + `{"jsonrpc":"2.0","id":12}` + "\n" + ok + "\n", limit, ok + "\n", true},
		{"noise over the limit", strings.Repeat("n", int(limit)+1) + "\n" + ok + "\n", limit, "", true},
		// The first 64 KiB chunk is under the limit, the line is not.
		{"over the limit in a later chunk", strings.Repeat("n", 100<<10) + "\n", 70 << 10, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStdoutFilter(strings.NewReader(tc.in), zap.NewNop())
			f.server, f.limit = "s", tc.limit
			calls := 0
			f.tooLarge = func(error) { calls++ }
			out, err := io.ReadAll(f)
			var tooLarge *MessageTooLargeError
			if got := errors.As(err, &tooLarge); got != tc.tooLarge || string(out) != tc.want {
				t.Fatalf("got %q, error %v; want %q, a *MessageTooLargeError: %v", out, err, tc.want, tc.tooLarge)
			}
			if tc.tooLarge && (calls != 1 || tooLarge.Limit != f.limit || tooLarge.Server != "s" || !tooLarge.Restarted) {
				t.Errorf("tooLarge called %d times with %+v, want once, naming s and the limit, restarting", calls, tooLarge)
			}
		})
	}
}
