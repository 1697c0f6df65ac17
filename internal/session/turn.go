package session

import (
	"context"
	"sync"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Turn is what noa decided on one turn of a session.
type Turn struct {
	// View is the projection of the whole session the model should read:
	// compressed spans replaced by their summaries, Compress calls stubbed
	// (or hidden once a higher tier absorbed their blocks). Texts are bare
	// (no ref tags; see Host.Ref). The nudge is not in it.
	View []noa.CoreMessage
	// Nudge is noa's rendered nudge, "" when it did not nudge this turn.
	Nudge string
	// SystemPrompt is noa's resident prompt, for the front to add to the
	// model's system prompt (over MCP: the initialize instructions).
	SystemPrompt string
	// Total is the size of every recorded message in tokens, as recorded
	// (cut texts at their cut size), Projected the size of View, and
	// ContextLimit the window noa paces its nudges against.
	Total, Projected, ContextLimit int
	// Recorded are the messages this turn added, as Record returns them.
	Recorded []Message
}

// MessageRef is the ref noa gave a message and the token count it froze for
// it when it first saw it. Both are permanent.
type MessageRef struct {
	Ref    string // "m00042"
	Tokens int
}

// Turn records msgs (none is fine) exactly as Record would and runs noa
// over the whole session, as one step: new messages get refs and frozen
// token counts, and noa decides whether to nudge. What the turn changed in
// noa's pacing is recorded with it (on the last message's record, or on a
// record of its own when there is no message and the pacing moved), so a
// rebuild from the transcript restores it.
//
// Nothing is recorded or changed when a message is invalid or the write
// fails.
func (h *Host) Turn(ctx context.Context, msgs ...Message) (Turn, error) {
	if err := h.begin(ctx); err != nil {
		return Turn{}, err
	}
	defer h.mu.Unlock()
	b, err := h.stage(msgs)
	if err != nil {
		return Turn{}, err
	}
	r := h.process(noa.ProcessTurnInput{Messages: h.msgs, State: h.st, Config: h.cfg, CountTokens: h.count.count})
	t := Turn{SystemPrompt: Instructions(), Total: h.total, ContextLimit: h.cfg.ModelContextLimit, Recorded: b.out}
	t.View, t.Nudge = withoutNudge(r.Messages)
	t.Projected = h.sum(t.View)
	pc := pacingOf(r.State)
	pc.Tokens, pc.Nudged = t.Projected, r.Nudge != nil
	switch {
	case len(b.recs) > 0:
		b.recs[len(b.recs)-1].Pacing = pc
	case !samePacing(pacingOf(h.st), pc):
		b.recs = append(b.recs, record{Kind: kindTurn, Pacing: pc})
	}
	if len(b.recs) > 0 {
		if err := h.appendRecords(b.recs...); err != nil {
			b.undo(h)
			return Turn{}, err
		}
	}
	h.st = r.State
	b.commit(h)
	h.unsaved++
	if h.unsaved >= h.opts.StateEvery {
		if err := h.saveState(); err != nil {
			// The transcript holds the turn; Open will bring state.json
			// forward. Not worth failing the turn over.
			h.log.Warn("writing state.json", zap.Error(err))
		}
	}
	for i, m := range b.out {
		if m.Original == "" {
			continue
		}
		if ref, _ := noa.RefForRaw(h.st.MessageRefs, m.ID); ref != b.predicted[i] {
			h.log.Error("a cut result's pointer names a different ref than it was given", zap.String("pointer", b.predicted[i]), zap.String("ref", ref))
		}
	}
	return t, nil
}

// withoutNudge splits noa's view into the view proper and the nudge's
// text. noa appends the nudge last; the view is then shared, not copied.
func withoutNudge(view []noa.CoreMessage) ([]noa.CoreMessage, string) {
	at := -1
	for i := len(view) - 1; i >= 0; i-- {
		if view[i].ID == noa.NudgeMessageID {
			at = i
			break
		}
	}
	switch at {
	case -1:
		return view, ""
	case len(view) - 1:
		return view[:at:at], view[at].Text
	default:
		return append(view[:at:at], view[at+1:]...), view[at].Text
	}
}

// Ref is the ref of the recorded message id and its frozen token count;
// false when it has none (a protected tool's message, one no turn has seen
// yet, or an unknown id).
func (h *Host) Ref(id string) (MessageRef, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ref, ok := noa.RefForRaw(h.st.MessageRefs, id)
	if !ok {
		return MessageRef{}, false
	}
	return MessageRef{Ref: ref, Tokens: h.st.TokenSnapshot[ref]}, true
}

// process is the one place the host runs noa's turn engine. Today that is
// noa.ProcessTurn over the whole stream on every turn; the incremental
// engine of issue 13 replaces it here.
func (h *Host) process(in noa.ProcessTurnInput) noa.ProcessTurnResult {
	return noa.ProcessTurn(in)
}

// synced returns st with refs and token snapshots brought up to date with
// msgs, exactly as noa's own turn does, and nothing else changed: a turn
// with no context limit runs only its sizing stages.
func (h *Host) synced(msgs []noa.CoreMessage, st noa.CompressionState) noa.CompressionState {
	cfg := h.cfg
	cfg.ModelContextLimit = 0
	r := h.process(noa.ProcessTurnInput{Messages: msgs, State: st, Config: cfg, TokenCount: 1, CountTokens: h.count.count})
	out := noa.CloneState(st)
	out.MessageRefs, out.TokenSnapshot = r.State.MessageRefs, r.State.TokenSnapshot
	return out
}

// sum measures a view.
func (h *Host) sum(view []noa.CoreMessage) int {
	n := 0
	for _, m := range view {
		n += h.count.message(m)
	}
	return n
}

// Instructions is noa's resident prompt: the initialize instructions over
// MCP, an addition to the system prompt for a model request.
func Instructions() string { return instructions() }

var instructions = sync.OnceValue(func() string { return noa.BuildSystemPrompt(noa.Sections{}) })

// memo caches token counts by text: noa measures every message of the view
// on every turn, and a real BPE tokenizer is far too slow to run over the
// whole session each time.
type memo struct {
	fn noa.TokenCountFn
	mu sync.Mutex
	m  map[string]int
}

func newMemo(fn noa.TokenCountFn) *memo {
	if fn == nil {
		fn = noa.DefaultCountTokens
	}
	return &memo{fn: fn, m: map[string]int{}}
}

// memoLimit bounds the cache; when it is exceeded the cache starts over.
const memoLimit = 1 << 17

func (c *memo) count(text string) int {
	c.mu.Lock()
	n, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.fn(text)
	c.mu.Lock()
	if len(c.m) >= memoLimit {
		c.m = map[string]int{}
	}
	c.m[text] = n
	c.mu.Unlock()
	return n
}

func (c *memo) message(m noa.CoreMessage) int { return noa.CountMessageTokens(m, c.count) }
