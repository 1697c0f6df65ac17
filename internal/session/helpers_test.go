package session

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// testClock is a deterministic clock: each reading is one second later.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// testOptions are small-window options: nudges start after a few thousand
// tokens of tool traffic.
func testOptions(t testing.TB) Options { return testOptionsIn(t.TempDir()) }

func testOptionsIn(dir string) Options {
	clock := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	cfg := noa.DefaultConfig(20000)
	return Options{Dir: dir, Noa: cfg, MaxResultTokens: 4000, StateEvery: 1, Now: clock.now}
}

func openHost(t testing.TB, opts Options, id string) *Host {
	t.Helper()
	h, err := Open(opts, id)
	if err != nil {
		t.Fatalf("Open(%q): %v", id, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// crash abandons h the way a process dying does: its transcript and lock
// file are closed (so the kernel drops the lock) and nothing else happens,
// in particular state.json is not brought up to date. Later uses of h fail
// with ErrClosed.
func crash(t testing.TB, h *Host) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if err := h.tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.lock.release(); err != nil {
		t.Fatal(err)
	}
}

// words makes deterministic prose of n words.
func words(rng *rand.Rand, n int) string {
	vocab := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima " +
		"internal/session/host.go:212 ProcessTurn archive block summary error timeout retry cache index")
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			if i%17 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(vocab[rng.Intn(len(vocab))])
	}
	return b.String()
}

// textResult is an upstream's plain text answer.
func textResult(text string) func(context.Context) (*mcp.CallToolResult, error) {
	return func(context.Context) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	}
}

// call runs one recorded tool call returning text, failing the test on error.
func call(t testing.TB, h *Host, tool, text string) *mcp.CallToolResult {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"path": "/data/" + tool})
	res, err := h.Call(context.Background(), tool, args, textResult(text))
	if err != nil {
		t.Fatalf("Call(%s): %v", tool, err)
	}
	return res
}

// texts are the text blocks of a result.
func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

var nudgeRange = regexp.MustCompile(`(m\d{5})–(m\d{5})\s+compressible`)

// nudgeOf returns the nudge block of a result, or "".
func nudgeOf(res *mcp.CallToolResult) string {
	for _, s := range texts(res) {
		if strings.HasPrefix(s, "[noa]") {
			return s
		}
	}
	return ""
}

// rangesOf reads the compressible ranges a nudge recommends.
func rangesOf(nudge string) [][2]string {
	var out [][2]string
	for _, m := range nudgeRange.FindAllStringSubmatch(nudge, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// compressArgs renders Compress arguments with a summary per range.
func compressArgs(ranges [][2]string) []byte {
	type item struct {
		Start   string `json:"start"`
		End     string `json:"end"`
		Summary string `json:"summary"`
		Topic   string `json:"topic"`
	}
	var items []item
	for _, r := range ranges {
		items = append(items, item{r[0], r[1], fmt.Sprintf("Read the data files between %s and %s; facts extracted: alpha and bravo are set, the retry loop in internal/session/host.go:212 is fine. TASK AS OF THIS BLOCK: continue with the cache.", r[0], r[1]), "data reads"})
	}
	b, _ := json.Marshal(map[string]any{"content": items})
	return b
}

// fillUntilNudge calls tools with bulky results until one carries a nudge.
func fillUntilNudge(t testing.TB, h *Host, rng *rand.Rand) *mcp.CallToolResult {
	t.Helper()
	for i := 0; i < 200; i++ {
		res := call(t, h, fmt.Sprintf("fs:read_%d", i), words(rng, 900))
		if nudgeOf(res) != "" {
			return res
		}
	}
	t.Fatal("no nudge after 200 bulky calls")
	return nil
}

// archiveFiles lists the files under a session's archive, relative.
func archiveFiles(t testing.TB, h *Host) []string {
	t.Helper()
	var out []string
	root := filepath.Join(h.Dir(), ArchiveDir)
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// readAll pages through read_archive from offset and concatenates the pages.
func readAll(t testing.TB, h *Host, a ReadArchiveArgs) (string, int) {
	t.Helper()
	var b strings.Builder
	pages := 0
	for {
		res := h.ReadArchive(context.Background(), a)
		if res.IsError {
			t.Fatalf("read_archive %+v: %v", a, texts(res))
		}
		tx := texts(res)
		if len(tx) != 2 {
			t.Fatalf("read_archive %+v: got %d text blocks, want 2", a, len(tx))
		}
		b.WriteString(tx[0])
		pages++
		m := regexp.MustCompile(`"offset":(\d+)\}\]$`).FindStringSubmatch(tx[1])
		if m == nil {
			if !strings.HasSuffix(tx[1], "end of the archive]") {
				t.Fatalf("page note %q names neither a next offset nor the end", tx[1])
			}
			return b.String(), pages
		}
		fmt.Sscan(m[1], &a.Offset)
	}
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func fmtInt(n int) string { return fmt.Sprint(n) }
