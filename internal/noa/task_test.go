package noa

import (
	"strings"
	"testing"
)

// TestTaskNeverOfferedOrCompressed: the first user message (the task, here
// sent as two text parts) is never inside a recommended range, a Compress
// range holding it is refused with an error naming its ref and the fix,
// and it stays in view verbatim while the session is compressed around it.
func TestTaskNeverOfferedOrCompressed(t *testing.T) {
	cfg := DefaultConfig(20000)
	h := newSimHost(t, cfg, 3)
	task := []CoreMessage{h.c.user(40), h.c.user(15)}
	nudges := 0
	for i := 0; i < 600 && nudges < 6; i++ {
		h.c.randomTurn("")
		r := h.turn()
		for _, m := range task {
			if !hasText(r.Messages, m) {
				t.Fatalf("turn %d: the task message %s is not in view verbatim", i, m.ID)
			}
		}
		if r.Nudge == nil || r.Nudge.Tier != 1 {
			continue
		}
		nudges++
		for _, rg := range r.Nudge.CompressibleRanges {
			lo, _ := RefToIndex(rg.StartRef)
			if lo <= 2 {
				t.Fatalf("turn %d: recommended range %s–%s holds the task (m00001–m00002)", i, rg.StartRef, rg.EndRef)
			}
		}
		if nudges == 2 {
			// A call that reaches back over the task is refused, whole.
			ar := h.compress([]CompressRange{{StartRef: "m00001", EndRef: r.Nudge.CompressibleRanges[0].EndRef,
				Summary: "Summary: the task and the work so far; TASK AS OF THIS BLOCK: continue the investigation."}})
			if len(ar.BlocksCreated) != 0 || len(ar.Errors) != 1 ||
				!strings.Contains(ar.Errors[0], "m00001 is the conversation's first user message") || !strings.Contains(ar.Errors[0], "Start the range after it") {
				t.Fatalf("got blocks %d, errors %q; want the range refused naming m00001 and where to start instead", len(ar.BlocksCreated), ar.Errors)
			}
			continue
		}
		if ar := h.obey(r.Nudge); len(ar.BlocksCreated) == 0 {
			t.Fatalf("turn %d: obeying the nudge: %v", i, ar.Errors)
		}
	}
	if nudges < 3 {
		t.Fatalf("only %d nudges", nudges)
	}
}

func hasText(view []CoreMessage, m CoreMessage) bool {
	for _, v := range view {
		if v.ID == m.ID {
			return v.Text == m.Text
		}
	}
	return false
}
