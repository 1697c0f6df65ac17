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

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/testenv"
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
func words(rng *rand.Rand, n int) string { return testenv.Prose(rng, n) }

// toolCall is the message of a call to tool with JSON arguments, as the
// MCP front records it (the host numbers it).
func toolCall(tool string, args json.RawMessage) Message {
	return Message{CoreMessage: noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: tool, Text: ArgumentsText(args)}}
}

// toolResult is the result of call with text, cut to size when oversize,
// as the MCP front records an ordinary tool's result.
func toolResult(call Message, text string) Message {
	return Message{CoreMessage: noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: call.ToolName, ToolCallID: call.ToolCallID, Text: text}, CutToSize: true}
}

// call records one tool call returning text and runs the turn, the way the
// MCP front does, failing the test on error.
func call(t testing.TB, h *Host, tool, text string) Turn {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"path": "/data/" + tool})
	return callArgs(t, h, tool, args, text)
}

// callArgs is call with the call's arguments given.
func callArgs(t testing.TB, h *Host, tool string, args json.RawMessage, text string) Turn {
	t.Helper()
	rec, err := h.Record(context.Background(), toolCall(tool, args))
	if err != nil {
		t.Fatalf("recording the call of %s: %v", tool, err)
	}
	turn, err := h.Turn(context.Background(), toolResult(rec[0], text))
	if err != nil {
		t.Fatalf("recording the result of %s: %v", tool, err)
	}
	return turn
}

// compress applies a Compress call, failing the test on a Go error.
func compress(t testing.TB, h *Host, args []byte) Panel {
	t.Helper()
	p, err := h.Compress(context.Background(), args)
	if err != nil {
		t.Fatalf("Compress: %v", err)
	}
	return p
}

var nudgeRange = regexp.MustCompile(`(m\d{5})–(m\d{5})\s+compressible`)

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

// fillUntilNudge calls tools with bulky results until a turn nudges.
func fillUntilNudge(t testing.TB, h *Host, rng *rand.Rand) Turn {
	t.Helper()
	for i := 0; i < 200; i++ {
		turn := call(t, h, fmt.Sprintf("fs:read_%d", i), words(rng, 900))
		if turn.Nudge != "" {
			return turn
		}
	}
	t.Fatal("no nudge after 200 bulky calls")
	return Turn{}
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
		page, err := h.ReadArchive(context.Background(), a)
		if err != nil {
			t.Fatalf("read_archive %+v: %v", a, err)
		}
		if page.Start != a.Offset && a.Offset < page.Size {
			// Offsets inside a character back up to its start; the tests
			// only pass offsets on boundaries.
			t.Fatalf("read_archive %+v: page starts at %d", a, page.Start)
		}
		b.WriteString(page.Text)
		pages++
		m := regexp.MustCompile(`"offset":(\d+)\}\]$`).FindStringSubmatch(page.Note)
		if m == nil {
			if !strings.HasSuffix(page.Note, "end of the archive]") || page.End != page.Size {
				t.Fatalf("page note %q names neither a next offset nor the end", page.Note)
			}
			return b.String(), pages
		}
		fmt.Sscan(m[1], &a.Offset)
		if a.Offset != page.End {
			t.Fatalf("page note names offset %d, page ends at %d", a.Offset, page.End)
		}
	}
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// sum measures a view with the host's counter.
func (h *Host) sum(view []noa.CoreMessage) int {
	n := 0
	for _, m := range view {
		n += h.count.message(m)
	}
	return n
}
