package session

import (
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Over MCP the first nudge carries the rules and later ones point back to
// it: they name the ranges the session can compress now (the same ranges
// noa's full nudge lists) and stay short.
func TestMCPNudgeSendsTheRulesOnce(t *testing.T) {
	h := openHost(t, testOptions(t), "s1")
	rng := newRand(7)
	first := fillUntilNudge(t, h, rng)
	if first.NudgeDecision == nil {
		t.Fatal("a turn with a nudge has no NudgeDecision")
	}
	shown := h.MCPNudge(first, "m00012")
	if !strings.Contains(shown, "HOW TO COMPRESS") {
		t.Errorf("first MCP nudge lacks the rules:\n%s", shown)
	}
	if strings.Contains(shown, noa.SystemPromptHeader) {
		t.Errorf("first MCP nudge points at %q, which the MCP instructions do not carry:\n%s", noa.SystemPromptHeader, shown)
	}
	if shown == first.Nudge {
		t.Errorf("first MCP nudge is noa's text unchanged; want its pointer to the resident prompt dropped")
	}

	var later Turn
	for i := 0; i < 200 && later.Nudge == ""; i++ {
		later = call(t, h, "fs:read_more", words(rng, 900))
	}
	if later.Nudge == "" {
		t.Fatal("no second nudge after 200 bulky calls")
	}
	short := h.MCPNudge(later, "m00040")
	if strings.Contains(short, "COPY EXACTLY") || !strings.Contains(short, "HOW TO COMPRESS, sent with the noa note after m00012") {
		t.Errorf("later MCP nudge: got\n%s\nwant the rules left out and a pointer to the note after m00012", short)
	}
	want, got := rangesOf(later.Nudge), rangesOf(short)
	if len(want) == 0 || len(got) != min(len(want), maxShortRanges) {
		t.Fatalf("later MCP nudge lists ranges %v, noa's nudge %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("range %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if n, full := noa.DefaultCountTokens(short), noa.DefaultCountTokens(shown); n*4 > full {
		t.Errorf("later MCP nudge is %d tokens against the first one's %d; want it under a quarter", n, full)
	}
}

// A turn without a nudge shows none.
func TestMCPNudgeNone(t *testing.T) {
	h := openHost(t, testOptions(t), "s2")
	turn := call(t, h, "fs:read", "short")
	if got := h.MCPNudge(turn, "m00001"); got != "" {
		t.Errorf("got %q, want no nudge", got)
	}
}
