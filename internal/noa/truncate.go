package noa

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// TruncateResult reports what the valve did.
type TruncateResult struct {
	Messages       []CoreMessage
	TruncatedCount int
	SavedTokens    int
}

// truncateKeepTokens is the least a shortened message keeps; a message is
// cut only when it holds more than twice as much.
const truncateKeepTokens = 400

// MessageOverheadTokens is what one view message costs the request beyond
// its text: the ref tag a host adds and the provider's framing, estimated.
// Emergency truncation reserves it per message so that the request, not
// only the bare texts, fits the window.
const MessageOverheadTokens = 12

// Cut classes, in the order emergency truncation takes from them (largest
// first within a class).
const (
	cutOutside   = iota // outside every protection
	cutProtected        // the recent zone, the latest user message, hard-protected tool results
	cutTask             // the first user message: only when it alone exceeds the window
	cutNever     = -1   // reasoning, tool calls, Compress exchanges, noa's own, already cut
)

// TruncateLargeToolOutputs is the mechanical last resort: once tokenCount
// reaches Truncate.Threshold of the window, or the view with its overhead
// (truncateReserve) would not fit the window, the largest messages are cut
// to head and tail until the view fits the smaller of 90% of the threshold
// and the window less that overhead.
//
// It rewrites only what is sent: msgs is not modified, a fresh slice is
// returned, message ids are unchanged, and since the stored history keeps
// the originals the cut lifts by itself once usage falls. Each cut says, in
// the text the model reads, which bytes were cut and the read_archive call
// that returns them (the host serves a message's recorded original by its
// ref or id). Called without a state, as here, messages are named by id and
// nothing is soft-protected; ProcessTurn names them by ref and protects
// its soft zone and the first user message.
//
// The spec cuts only tool results. Anything that can make a request too
// large is cut here (issue 27): tool results, then assistant and user text
// (a 60K-token answer, a pasted document), outside protection first, then
// inside the recent zone and hard-protected results, and the first user
// message only when it alone exceeds the window. Reasoning and tool calls
// must reach the provider as the model wrote them and are never cut. An
// attachment (isAttachment: an image weighed at its estimate) is cut whole.
func TruncateLargeToolOutputs(msgs []CoreMessage, tokenCount int, cfg Config, count TokenCountFn) TruncateResult {
	res, _ := truncateView(msgs, CompressionState{}, tokenCount, cfg, count)
	return res
}

// truncateView is emergency truncation of a projected view under st: the
// ProcessTurn path. It also returns the indices it cut.
func truncateView(msgs []CoreMessage, st CompressionState, tokenCount int, cfg Config, count TokenCountFn) (TruncateResult, []int) {
	count = countFn(count)
	reserve := truncateReserve(cfg, count)
	if !truncateDue(len(msgs), tokenCount, reserve, cfg) {
		return TruncateResult{Messages: msgs}, nil
	}
	hard := hardProtectedIDs(msgs, cfg)
	soft := ComputeProtectedRefs(msgs, st, cfg)
	lo, hi := firstUserSpan(msgs)
	return truncateWith(msgs, tokenCount, reserve, cfg, count, func(i int) cutFacts {
		m := msgs[i]
		ref, _ := RefForRaw(st.MessageRefs, m.ID)
		f := cutFacts{tokens: CountMessageTokens(m, count), handle: ref}
		if ref == "" {
			f.handle = m.ID
		}
		f.class = cutClass(m, hard[m.ID], soft[ref], i >= lo && i < hi, containsMarker(m.Text))
		return f
	})
}

// cutFacts are what truncation needs of a view message: its size, its cut
// class and the handle its note names for read_archive.
type cutFacts struct {
	tokens int
	class  int
	handle string
}

// cutClass classifies a view message for truncation.
func cutClass(m CoreMessage, hard, soft, task, marker bool) int {
	if marker || isSynthetic(m) || m.ToolName == CompressToolName {
		return cutNever
	}
	switch {
	case m.ContentType == CTToolResult && hard, m.ContentType == CTToolResult && soft:
		return cutProtected
	case m.ContentType == CTToolResult:
		return cutOutside
	case m.ContentType != CTText:
		return cutNever
	case task:
		return cutTask
	case soft:
		return cutProtected
	}
	return cutOutside
}

// truncateReserve is what the request spends beside the view's texts that
// the window must hold too, without the per-message overhead: noa's
// resident prompt and the largest nudge, or Truncate.ReserveTokens.
func truncateReserve(cfg Config, count TokenCountFn) int {
	if r := cfg.Truncate.ReserveTokens; r > 0 {
		return r
	}
	return NudgeMaxTokens + count(residentPrompt)
}

// residentPrompt is the default resident prompt, which a host adds to the
// request beside the view.
var residentPrompt = BuildSystemPrompt(Sections{})

// truncateDue: the view of n messages measured at tokens must be cut.
func truncateDue(n, tokens, reserve int, cfg Config) bool {
	limit, th := cfg.ModelContextLimit, cfg.Truncate.Threshold
	if limit <= 0 || th <= 0 {
		return false
	}
	return float64(tokens) >= th*float64(limit) || tokens+reserve+n*MessageOverheadTokens > limit
}

// truncateWith cuts msgs, measured at tokenCount, with the facts of each
// message from facts. It returns the indices it cut.
func truncateWith(msgs []CoreMessage, tokenCount, reserve int, cfg Config, count TokenCountFn, facts func(i int) cutFacts) (TruncateResult, []int) {
	res := TruncateResult{Messages: msgs}
	if !truncateDue(len(msgs), tokenCount, reserve, cfg) {
		return res, nil
	}
	limit := cfg.ModelContextLimit
	fits := limit - reserve - len(msgs)*MessageOverheadTokens
	target := min(int(0.9*cfg.Truncate.Threshold*float64(limit)), fits)
	need := tokenCount - target
	type candidate struct {
		idx int
		f   cutFacts
	}
	var cands []candidate
	task := 0
	for i := range msgs {
		f := facts(i)
		if f.class == cutTask {
			task += f.tokens
		}
		if f.class != cutNever && (f.tokens > truncateKeepTokens*2 || isAttachment(msgs[i], f.tokens)) {
			cands = append(cands, candidate{i, f})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].f.class != cands[b].f.class {
			return cands[a].f.class < cands[b].f.class
		}
		return cands[a].f.tokens > cands[b].f.tokens
	})
	tool := cfg.Truncate.RecallTool
	if tool == "" {
		tool = DefaultRecallTool
	}
	var out []CoreMessage
	var cut []int
	for _, c := range cands {
		if need <= 0 {
			break
		}
		if c.f.class == cutTask && task <= fits {
			continue // the task is cut only when it alone cannot fit
		}
		if out == nil {
			out = cloneMessages(msgs)
		}
		m := out[c.idx]
		// What a cut keeps depends on the message and the window alone, not
		// on how much this turn needs: the next turn, a little larger,
		// then cuts the same bytes, so the prompt cache keeps every
		// message from this one on (issue 27: a keep sized to the need
		// changed the cut text, and the cache with it, on every turn).
		// Two sizes only: a twentieth of the window (at most a quarter of
		// the message) when that frees enough, else the least.
		keep := truncateKeepTokens
		if step := min(c.f.tokens/4, limit/20); step > keep && c.f.tokens-need >= step {
			keep = step
		}
		handle := c.f.handle
		if isAttachment(m, c.f.tokens) {
			m.Text = attachmentNote(m.Text, c.f.tokens, tool, handle)
		} else {
			m.Text = CutMiddle(m.Text, c.f.tokens, keep, count, func(from, to, size int) string {
				return truncationNote(from, to, size, tool, handle)
			})
		}
		saved := c.f.tokens - CountMessageTokens(m, count)
		if saved <= 0 {
			continue
		}
		out[c.idx] = m
		cut = append(cut, c.idx)
		need -= saved
		res.SavedTokens += saved
		res.TruncatedCount++
	}
	if out != nil {
		res.Messages = out
	}
	return res, cut
}

func containsMarker(s string) bool { return strings.Contains(s, TruncationMarker) }

// CutMiddle keeps the head (about two thirds) and the tail of text, whose
// size is total tokens, joined by note(from, to, len(text)) naming the cut
// bytes [from, to), within keep tokens by count: it starts a little under
// the proportion and shrinks until the count agrees, since total may be an
// estimate and token density is uneven. Cuts fall on rune boundaries, at
// line ends where one is near.
func CutMiddle(text string, total, keep int, count TokenCountFn, note func(from, to, size int) string) string {
	n := len(text)
	if total <= 0 || keep >= total {
		return text
	}
	kb := int(int64(n) * int64(keep) / int64(total) * 97 / 100)
	out := text
	for range 8 {
		head := CutBack(text, kb*2/3)
		tail := CutForward(text, n-(kb-kb*2/3))
		if tail < head {
			tail = head
		}
		out = text[:head] + note(head, tail, n) + text[tail:]
		got := count(out)
		if got <= keep || kb == 0 {
			return out
		}
		kb = int(float64(kb) * float64(keep) / float64(got) * 0.95)
	}
	return out
}

// attachmentTokens: an attachment weighing more is worth cutting.
const attachmentTokens = 100

// isAttachment: m stands for an attachment (an image, a document) the
// host weighs at an estimate above its text's size, so it can only be cut
// whole. No tokenizer gives a text more tokens than bytes.
func isAttachment(m CoreMessage, tokens int) bool {
	return tokens > len(m.Text) && tokens > attachmentTokens
}

// attachmentNote replaces an attachment cut whole. The attachment is not
// text, so read_archive cannot return it; the note says so.
func attachmentNote(text string, tokens int, tool, handle string) string {
	return fmt.Sprintf("%s: an attachment of about %d tokens was left out of this request so it fits the model's window. "+
		"%s {\"ref\":%q} returns only its description (%s), not the attachment; ask for it again if you need it.]",
		TruncationMarker, tokens, tool, handle, text)
}

// truncationNote tells the model what was cut and the call that returns it.
func truncationNote(from, to, size int, tool, handle string) string {
	return fmt.Sprintf("\n\n%s: bytes %d-%d of %d were cut from the middle of this message so the request fits the model's window. "+
		"The original is kept verbatim; read the cut part with %s {\"ref\":%q,\"offset\":%d,\"limit\":%d}; "+
		"if the answer comes in pages, continue from the offset each page names until byte %d.]\n\n",
		TruncationMarker, from, to, size, tool, handle, from, to-from, to)
}

// CutBack is a cut position at or before i on a rune boundary, at the end
// of a line when one is within 256 bytes.
func CutBack(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	if i <= 0 {
		return 0
	}
	if j := strings.LastIndexByte(s[max(0, i-256):i], '\n'); j >= 0 {
		return max(0, i-256) + j + 1
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// CutForward is a cut position at or after i on a rune boundary, at the
// start of a line when one is within 256 bytes.
func CutForward(s string, i int) int {
	if i <= 0 {
		return 0
	}
	if i >= len(s) {
		return len(s)
	}
	if j := strings.IndexByte(s[i:min(len(s), i+256)], '\n'); j >= 0 {
		return i + j + 1
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}
