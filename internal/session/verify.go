package session

import (
	"fmt"
	"reflect"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// verifier, switched on by Options.verify in tests, runs noa.ProcessTurn
// over the whole stream beside every turn of the engine and notes where
// the two differ: the proof, at the host, that the incremental path gives
// the same views, nudges, refs and state as the full computation. O(n) per
// turn; never on in production.
type verifier struct {
	mismatches []string
}

// verifyState is called with the lock held, before the turn's messages reach
// the engine; it returns the state the full computation starts from.
func (h *Host) verifyState() noa.CompressionState {
	if h.verify == nil {
		return noa.CompressionState{}
	}
	return h.eng.State()
}

// verifyTurn compares the engine's turn r with ProcessTurn over the stream
// and st (the state before the turn).
func (h *Host) verifyTurn(st noa.CompressionState, r noa.TurnResult) {
	if h.verify == nil {
		return
	}
	full := noa.ProcessTurn(noa.ProcessTurnInput{Messages: h.msgs, State: st, Config: h.cfg, CountTokens: h.count.count})
	var view []noa.CoreMessage
	nudge := ""
	for _, m := range full.Messages {
		if m.ID == noa.NudgeMessageID {
			nudge = m.Text
			continue
		}
		view = append(view, m)
	}
	at := len(h.msgs)
	note := func(what string) {
		h.verify.mismatches = append(h.verify.mismatches, fmt.Sprintf("turn at %d messages: %s", at, what))
	}
	if len(view) != len(r.View) || (len(view) > 0 && !reflect.DeepEqual(view, r.View)) {
		note(fmt.Sprintf("views differ (%d messages in full, %d incremental)", len(view), len(r.View)))
	}
	if nudge != r.NudgeText {
		note(fmt.Sprintf("nudges differ (full %q, incremental %q)", nudge, r.NudgeText))
	}
	if (full.Nudge == nil) != (r.Nudge == nil) {
		note("one nudged and the other did not")
	}
	if got := h.eng.State(); !sameState(full.State, got) {
		note("states differ: " + stateDiff(full.State, got))
	}
}
