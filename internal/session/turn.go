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
	// Nudge is noa's rendered nudge, "" when it did not nudge this turn;
	// NudgeDecision is the decision it renders, from which MCPNudge writes
	// the short form.
	Nudge         string
	NudgeDecision *noa.NudgeDecision
	// SystemPrompt is noa's resident prompt, for the front to add to the
	// model's system prompt (over MCP: the initialize instructions).
	SystemPrompt string
	// Total is the size of every recorded message in tokens, as recorded
	// (cut texts at their cut size), Projected the size of View, and
	// ContextLimit the window noa paces its nudges against.
	Total, Projected, ContextLimit int
	// Recorded are the messages this turn added, as Record returns them.
	Recorded []Message
	// Engaged reports whether the session was engaged (Host.Engage)
	// when the turn ran.
	Engaged bool
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
// noa runs incrementally (noa.Engine): a turn costs what its new messages
// and the recent zone cost, not the length of the session.
//
// Nothing is recorded or changed when a message is invalid or the write
// fails.
func (h *Host) Turn(ctx context.Context, msgs ...Message) (Turn, error) {
	t, off, err := h.turn(ctx, msgs)
	if err != nil {
		return Turn{}, err
	}
	// The fsync, shared with the session's other calls finishing now, runs
	// outside h.mu; the turn is answered only once its records are on disk
	// (or, with Options.FlushEvery, written: committed).
	if err := h.committed(off); err != nil {
		return Turn{}, err
	}
	return t, nil
}

// turn is Turn up to the fsync, under the lock; it returns the transcript
// offset that must be durable before the caller answers.
func (h *Host) turn(ctx context.Context, msgs []Message) (Turn, int64, error) {
	if err := h.begin(ctx); err != nil {
		return Turn{}, 0, err
	}
	defer h.mu.Unlock()
	defer h.count.release()
	b, err := h.stage(msgs, false)
	if err != nil {
		return Turn{}, 0, err
	}
	before, vst := h.pacing(), h.verifyState()
	h.eng.Append(h.msgs[b.n0:]...)
	r := h.eng.Turn(0)
	h.verifyTurn(vst, r)
	t := Turn{SystemPrompt: Instructions(), Total: h.total, ContextLimit: h.cfg.ModelContextLimit, Recorded: b.out, Engaged: h.engaged}
	t.View, t.Nudge, t.NudgeDecision, t.Projected = r.View, r.NudgeText, r.Nudge, r.ViewTokens
	pc := h.pacing()
	pc.Tokens, pc.Nudged = t.Projected, r.Nudge != nil
	switch {
	case len(b.recs) > 0:
		b.recs[len(b.recs)-1].Pacing = pc
	case !samePacing(before, pc):
		b.recs = append(b.recs, record{Kind: kindTurn, Pacing: pc})
	}
	off := int64(0)
	if len(b.recs) > 0 {
		if off, err = h.appendRecords(b.recs...); err != nil {
			h.rewind(b.n0, before)
			b.undo(h)
			return Turn{}, 0, err
		}
	}
	b.commit(h)
	h.unsaved++
	if h.checkpointDue() {
		h.queueCheckpoint() // off the call path (checkpoint.go)
	}
	h.learnRefs()
	for i, m := range b.out {
		if m.Original == "" {
			continue
		}
		if ref, _, _ := h.eng.Ref(m.ID); ref != b.predicted[i] {
			h.log.Error("a cut result's pointer names a different ref than it was given", zap.String("pointer", b.predicted[i]), zap.String("ref", ref))
		}
	}
	return t, off, nil
}

// Peek is what Turn(ctx, pending...) would return now, without recording
// or changing anything: no record, no archive, no ref, no pacing moves and
// no id is used up (Recorded shows the ids and cuts the messages would
// get; a cut's Original names where the original would be archived). The
// gateway answers count_tokens with it. Invalid messages are refused as
// Turn refuses them.
//
// Unlike Turn it costs O(n) in the session's length: the engine cannot
// take messages back, so the turn is computed in full (noa.ProcessTurn
// over a copy of the state), as the engine's own would be.
func (h *Host) Peek(ctx context.Context, pending ...Message) (Turn, error) {
	if err := h.begin(ctx); err != nil {
		return Turn{}, err
	}
	defer h.mu.Unlock()
	defer h.count.release()
	nextID := h.nextID
	b, err := h.stage(pending, true)
	if err != nil {
		return Turn{}, err
	}
	defer func() {
		b.undo(h)
		h.nextID = nextID
	}()
	r := noa.ProcessTurn(noa.ProcessTurnInput{Messages: h.msgs, State: h.eng.State(), Config: h.cfg, CountTokens: h.count.count})
	t := Turn{SystemPrompt: Instructions(), Total: h.total, ContextLimit: h.cfg.ModelContextLimit, Recorded: b.out, NudgeDecision: r.Nudge, Engaged: h.engaged}
	t.View = make([]noa.CoreMessage, 0, len(r.Messages))
	for _, m := range r.Messages {
		if m.ID == noa.NudgeMessageID {
			t.Nudge = m.Text
			continue
		}
		t.View = append(t.View, m)
		t.Projected += h.count.message(m)
	}
	return t, nil
}

// pacing is the engine's current pacing.
func (h *Host) pacing() *pacing {
	return pacingOf(noa.CompressionState{Nudge: h.eng.NudgeState(), Stats: h.eng.Stats()})
}

// rewind takes the engine back to the stream's first n messages and the
// pacing it had before a turn whose write failed: the engine cannot drop
// messages, so it is started again from its state with the turn's refs
// removed. O(n), and only on a failed write.
func (h *Host) rewind(n int, pc *pacing) {
	st := h.eng.State()
	for _, m := range h.msgs[n:] {
		ref, ok := st.MessageRefs.ByRaw[m.ID]
		if !ok {
			continue
		}
		delete(st.MessageRefs.ByRaw, m.ID)
		if ref != noa.BlockedRef {
			delete(st.MessageRefs.ByRef, ref)
			delete(st.TokenSnapshot, ref)
			delete(h.refs, ref)
		}
	}
	pc.apply(&st)
	h.startEngine(h.msgs[:n], st)
}

// startEngine (re)starts the engine over msgs (the stream's first
// len(msgs) messages) and st: every message is counted once (the memo spares
// a real tokenizer most of it on a restart).
func (h *Host) startEngine(msgs []noa.CoreMessage, st noa.CompressionState) {
	h.eng = noa.NewEngine(noa.EngineInput{Messages: msgs, State: st, Config: h.cfg, CountTokens: h.count.count})
	h.blocks = noa.CloneState(noa.CompressionState{Blocks: st.Blocks}).Blocks
	h.refs = map[string]string{}
	h.refNext = noa.MinRefIndex
	for ref, id := range st.MessageRefs.ByRef {
		h.refs[ref] = id
		if i, ok := noa.RefToIndex(ref); ok && i >= h.refNext {
			h.refNext = i + 1
		}
	}
	h.refSeen = 0
	h.learnRefsUpTo(len(msgs))
}

// learnRefs notes the refs the engine gave the messages recorded since the
// last call (which syncs it, as its next turn would): read_archive resolves
// refs through them, and cutOversize predicts the next one from them.
// O(new messages).
func (h *Host) learnRefs() { h.learnRefsUpTo(len(h.msgs)) }

func (h *Host) learnRefsUpTo(n int) {
	for ; h.refSeen < n; h.refSeen++ {
		m := h.msgs[h.refSeen]
		ref, _, ok := h.eng.Ref(m.ID)
		if !ok {
			continue
		}
		h.refs[ref] = m.ID
		if i, ok := noa.RefToIndex(ref); ok && i >= h.refNext {
			h.refNext = i + 1
		}
	}
}

// Ref is the ref of the recorded message id and its frozen token count;
// false when it has none (a protected tool's message, or an unknown id).
// A message recorded without a turn gets the ref its next turn gives it.
func (h *Host) Ref(id string) (MessageRef, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, known := h.index[id]; !known {
		return MessageRef{}, false
	}
	ref, tokens, ok := h.eng.Ref(id)
	if !ok {
		return MessageRef{}, false
	}
	return MessageRef{Ref: ref, Tokens: tokens}, true
}

// Instructions is noa's resident prompt: the initialize instructions over
// MCP, an addition to the system prompt for a model request.
func Instructions() string { return instructions() }

var instructions = sync.OnceValue(func() string { return noa.BuildSystemPrompt(noa.Sections{}) })

// memo caches token counts by text: noa measures messages more than once
// (the stream's total, the engine's count, a cut's size), and a real BPE
// tokenizer is slow. A text of bigText bytes or more is cached only until
// release, which the host calls at the end of each call: it is counted
// once in that call, and the cache never keeps a large payload alive.
type memo struct {
	fn noa.TokenCountFn
	mu sync.Mutex
	m  map[string]int
	// big holds this call's large texts.
	big map[string]int
}

func newMemo(fn noa.TokenCountFn) *memo {
	if fn == nil {
		fn = noa.DefaultCountTokens
	}
	return &memo{fn: fn, m: map[string]int{}, big: map[string]int{}}
}

// memoLimit bounds the cache; when it is exceeded the cache starts over.
// bigText is the size from which a text is cached for one call only.
const (
	memoLimit = 1 << 17
	bigText   = 64 << 10
)

func (c *memo) count(text string) int {
	cache := c.m
	if len(text) >= bigText {
		cache = c.big
	}
	c.mu.Lock()
	n, ok := cache[text]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = c.fn(text)
	c.mu.Lock()
	if len(c.m) >= memoLimit {
		c.m = map[string]int{}
		if len(text) < bigText {
			cache = c.m
		}
	}
	cache[text] = n
	c.mu.Unlock()
	return n
}

// seed records text's count, known from its parts' (see piecewiseCut),
// so the text is not tokenized again.
func (c *memo) seed(text string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(text) >= bigText {
		c.big[text] = n
	} else if len(c.m) < memoLimit {
		c.m[text] = n
	}
}

// release forgets the large texts counted so far.
func (c *memo) release() {
	c.mu.Lock()
	if len(c.big) > 0 {
		c.big = map[string]int{}
	}
	c.mu.Unlock()
}

func (c *memo) message(m noa.CoreMessage) int { return noa.CountMessageTokens(m, c.count) }
