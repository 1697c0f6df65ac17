package noa

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// lines is a text of about tokens tokens (DefaultCountTokens) in numbered
// lines, so a cut's head and tail can be told apart.
func lines(prefix string, tokens int) string {
	var b strings.Builder
	for i := 0; DefaultCountTokens(b.String()) < tokens; i++ {
		for j := 0; j < 200; j++ {
			fmt.Fprintf(&b, "%s line %06d: the quick brown fox jumps over the lazy dog\n", prefix, i*200+j)
		}
	}
	return b.String()
}

var cutCall = regexp.MustCompile(`read_archive \{"ref":"([^"]+)","offset":(\d+),"limit":(\d+)\}`)

// requireFits checks that view, with the overhead a host adds, fits the
// window, and that every cut in it can be undone from the originals in
// history through the read_archive call its note names.
func requireFits(t *testing.T, name string, view, history []CoreMessage, st CompressionState, cfg Config) int {
	t.Helper()
	total := 0
	for _, m := range view {
		total += CountMessageTokens(m, nil)
	}
	reserve := truncateReserve(cfg, DefaultCountTokens)
	if got := total + reserve + len(view)*MessageOverheadTokens; got > cfg.ModelContextLimit {
		t.Fatalf("%s: the view with its overhead is %d tokens, over the %d window", name, got, cfg.ModelContextLimit)
	}
	orig := map[string]string{}
	for _, m := range history {
		orig[m.ID] = m.Text
	}
	cuts := 0
	for _, m := range view {
		if !containsMarker(m.Text) {
			if o, ok := orig[m.ID]; ok && o != m.Text && !strings.HasPrefix(m.Text, `{"content"`) {
				t.Fatalf("%s: %s changed without a cut note", name, m.ID)
			}
			continue
		}
		cuts++
		g := cutCall.FindStringSubmatch(m.Text)
		if g == nil {
			t.Fatalf("%s: cut %s names no read_archive call:\n%.300s", name, m.ID, m.Text)
		}
		id := g[1]
		if raw, ok := RawForRef(st.MessageRefs, g[1]); ok {
			id = raw
		}
		if id != m.ID {
			t.Fatalf("%s: cut %s points at %s (%s)", name, m.ID, g[1], id)
		}
		off, _ := strconv.Atoi(g[2])
		n, _ := strconv.Atoi(g[3])
		o := orig[id]
		if off+n > len(o) {
			t.Fatalf("%s: cut %s names bytes %d-%d of a %d-byte original", name, m.ID, off, off+n, len(o))
		}
		head, tail := o[:off], o[off+n:]
		if len(m.Text) < len(head)+len(tail) || !strings.HasPrefix(m.Text, head) || !strings.HasSuffix(m.Text, tail) ||
			!strings.HasPrefix(m.Text[len(head):len(m.Text)-len(tail)], "\n\n"+TruncationMarker) {
			t.Fatalf("%s: cut %s is not the original's head and tail around bytes %d-%d", name, m.ID, off, off+n)
		}
	}
	return cuts
}

// TestEmergencyNeverOverTheWindow: whatever makes a view too large (a huge
// assistant message, a pasted document in the latest user turn, a giant
// tool result in the recent zone, a task larger than the window) the view
// ProcessTurn and the Engine send fits a 40K window with its overhead, the
// cut is recoverable through the read_archive call its note names, and
// the first user message is cut only when it alone exceeds the window.
func TestEmergencyNeverOverTheWindow(t *testing.T) {
	cfg := DefaultConfig(40000)
	cases := []struct {
		name string
		msgs func(c *convo) []CoreMessage
		// task: the first user message must stay whole.
		task bool
	}{
		{"assistant message of 60K", func(c *convo) []CoreMessage {
			c.user(30)
			for range 10 {
				c.tool("fetch", 300)
			}
			c.msgs = append(c.msgs, CoreMessage{ID: "huge", Role: RoleAssistant, ContentType: CTText, Text: lines("answer", 60000)})
			c.user(10)
			c.assistant(20)
			return c.msgs
		}, true},
		{"pasted document in the latest user turn", func(c *convo) []CoreMessage {
			c.user(30)
			for range 20 {
				c.tool("fetch", 300)
			}
			c.msgs = append(c.msgs, CoreMessage{ID: "doc", Role: RoleUser, ContentType: CTText, Text: lines("document", 50000)})
			return c.msgs
		}, true},
		{"giant tool result in the recent zone", func(c *convo) []CoreMessage {
			c.user(30)
			for range 20 {
				c.tool("fetch", 300)
			}
			c.msgs = append(c.msgs,
				CoreMessage{ID: "gc", Role: RoleAssistant, ContentType: CTToolCall, ToolName: "fetch", ToolCallID: "gk", Text: `{}`},
				CoreMessage{ID: "gr", Role: RoleTool, ContentType: CTToolResult, ToolName: "fetch", ToolCallID: "gk", Text: lines("result", 70000)})
			return c.msgs
		}, true},
		{"task of 20K beside a 30K answer", func(c *convo) []CoreMessage {
			c.msgs = append(c.msgs, CoreMessage{ID: "task", Role: RoleUser, ContentType: CTText, Text: lines("task", 20000)})
			c.msgs = append(c.msgs, CoreMessage{ID: "answer", Role: RoleAssistant, ContentType: CTText, Text: lines("answer", 30000)})
			c.user(5)
			return c.msgs
		}, true},
		{"task larger than the window", func(c *convo) []CoreMessage {
			c.msgs = append(c.msgs, CoreMessage{ID: "task", Role: RoleUser, ContentType: CTText, Text: lines("task", 45000)})
			return c.msgs
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msgs := tc.msgs(newConvo(9))
			r := ProcessTurn(ProcessTurnInput{Messages: msgs, State: CreateInitialState("s", "/a"), Config: cfg})
			view := r.Messages
			if r.Nudge != nil {
				view = view[:len(view)-1]
			}
			if cuts := requireFits(t, "ProcessTurn", view, msgs, r.State, cfg); cuts == 0 || cuts != r.TruncatedCount {
				t.Fatalf("got %d cuts in view, TruncatedCount %d; want the same, at least one", cuts, r.TruncatedCount)
			}
			first := msgs[0]
			for _, m := range view {
				if m.ID == first.ID && (m.Text == first.Text) != tc.task {
					t.Fatalf("the first user message whole: %v, want %v", m.Text == first.Text, tc.task)
				}
			}
			e := NewEngine(EngineInput{Messages: msgs, State: CreateInitialState("s", "/a"), Config: cfg})
			er := e.Turn(0)
			if diff := cmpDiff(view, er.View); diff != "" {
				t.Fatalf("Engine view differs from ProcessTurn (-want +got):\n%.2000s", diff)
			}
			if er.TruncatedCount != r.TruncatedCount || (er.Nudge == nil) != (r.Nudge == nil) {
				t.Fatalf("Engine cut %d and nudged %v; ProcessTurn cut %d and nudged %v", er.TruncatedCount, er.Nudge != nil, r.TruncatedCount, r.Nudge != nil)
			}
		})
	}
}

// TestEmergencyCutsWholeImages: a conversation of many images, each
// weighed at a fixed estimate, is brought under the window by leaving
// whole images out (their note names the message), never by cutting into
// a placeholder, and the Engine agrees with ProcessTurn.
func TestEmergencyCutsWholeImages(t *testing.T) {
	const image = "[opaque image: ~1600 tokens]"
	count := func(s string) int {
		if s == image {
			return 1600
		}
		return DefaultCountTokens(s)
	}
	cfg := DefaultConfig(40000)
	c := newConvo(4)
	c.user(20)
	for i := range 40 {
		c.msgs = append(c.msgs, CoreMessage{ID: fmt.Sprintf("img%02d", i), Role: RoleUser, ContentType: CTText, Text: image})
		c.assistant(15)
	}
	r := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: CreateInitialState("s", "/a"), Config: cfg, CountTokens: count})
	view := r.Messages
	if r.Nudge != nil {
		view = view[:len(view)-1]
	}
	total, cut := 0, 0
	for _, m := range view {
		total += CountMessageTokens(m, count)
		if strings.HasPrefix(m.ID, "img") && m.Text != image {
			ref, _ := RefForRaw(r.State.MessageRefs, m.ID)
			if !strings.HasPrefix(m.Text, TruncationMarker) || !strings.Contains(m.Text, image) || !strings.Contains(m.Text, fmt.Sprintf(`read_archive {"ref":%q}`, ref)) {
				t.Fatalf("image %s was not cut whole with its note: %q", m.ID, m.Text)
			}
			cut++
		}
	}
	if got := total + truncateReserve(cfg, count) + len(view)*MessageOverheadTokens; got > cfg.ModelContextLimit || cut == 0 || cut != r.TruncatedCount {
		t.Fatalf("view with overhead %d tokens (window %d), %d images cut, TruncatedCount %d", got, cfg.ModelContextLimit, cut, r.TruncatedCount)
	}
	if view[0].Text != c.msgs[0].Text {
		t.Fatalf("the task was cut")
	}
	e := NewEngine(EngineInput{Messages: c.msgs, State: CreateInitialState("s", "/a"), Config: cfg, CountTokens: count})
	if diff := cmpDiff(view, e.Turn(0).View); diff != "" {
		t.Fatalf("Engine view differs from ProcessTurn (-want +got):\n%.2000s", diff)
	}
}

// TestEmergencyCutIsStable: two turns of a growing conversation cut the
// same message to the same bytes, so the provider's prompt cache keeps it
// and everything after it (issue 27: a cut sized to each turn's need
// changed on every turn, and the cache with it).
func TestEmergencyCutIsStable(t *testing.T) {
	cfg := testConfig() // 100K window, threshold 0.95
	msgs := []CoreMessage{
		txt("u", RoleUser, "go"),
		call("c1", "k1", "fetch"), result("big", "k1", "fetch", long("aaaa", 90000)),
		call("c2", "k2", "fetch"), result("mid", "k2", "fetch", long("bbbb", 3000)),
	}
	first := TruncateLargeToolOutputs(msgs, 100000, cfg, nil)
	next := TruncateLargeToolOutputs(append(msgs, txt("more", RoleUser, long("cccc", 1000))), 103000, cfg, nil)
	if first.TruncatedCount == 0 {
		t.Fatal("nothing was cut; the test needs a cut")
	}
	if a, b := first.Messages[2].Text, next.Messages[2].Text; a != b {
		t.Errorf("the big result was cut to %d bytes, then to %d: want the same bytes on both turns", len(a), len(b))
	}
}

// TestShellAgentZoneIsTheTail: an agent whose every call is Bash (a
// never-preserve tool: it takes no slot in the recent zone) writes a line
// of text before each call. The recent zone is still the conversation's
// tail, so the range noa recommends spans the older steps whole instead of
// one step at a time between soft-protected texts (issue 27: a nudge
// offered only single steps, and each compression freed almost nothing).
func TestShellAgentZoneIsTheTail(t *testing.T) {
	cfg := DefaultConfig(40000)
	msgs := []CoreMessage{txt("task", RoleUser, "Fix the failing test in the repository.")}
	for i := range 60 {
		k := fmt.Sprint(i)
		msgs = append(msgs, txt("say"+k, RoleAssistant, "Let me look at the next file."),
			call("c"+k, "k"+k, "bash"), result("r"+k, "k"+k, "bash", long("line of output "+k, 60)))
	}
	r := ProcessTurn(ProcessTurnInput{Messages: msgs, State: CreateInitialState("s", ""), Config: cfg, TokenCount: 30000})
	if r.Nudge == nil || len(r.Nudge.CompressibleRanges) == 0 {
		t.Fatal("no nudge with ranges; the test needs one")
	}
	if got := r.Nudge.CompressibleRanges[0].Count; got < len(msgs)/2 {
		t.Errorf("the largest recommended range holds %d messages of %d, want most of the older steps in one range", got, len(msgs))
	}
}
