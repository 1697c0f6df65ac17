package session

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// cutText is a text cut to size.
type cutText struct {
	// text is what is recorded and returned; rel where the original is
	// archived; ref the ref the pointer names.
	text, rel, ref string
}

// cutOversize archives and cuts m's text when it is above MaxResultTokens,
// returning what the model will hold. m is about to join the stream after
// the batch's messages from n0 on (its ref is the one noa gives it next).
// It returns nil when the text fits, and also when archiving fails: then
// the text stays whole, because cutting what cannot be recovered would
// lose it. A dry cut (Peek) archives nothing and names the path the
// original would take.
//
// The whole text is never tokenized when it is far over the limit (see
// measure); the cut is found from byte offsets and counted exactly.
func (h *Host) cutOversize(m noa.CoreMessage, n0 int, dry bool) *cutText {
	limit := h.opts.MaxResultTokens
	if len(m.Text) <= limit {
		return nil // a token is at least one byte
	}
	// Leave room for the ref tag and the nudge's framing.
	budget := max(limit-64, limit/2)
	ref := h.nextRef(m, n0)
	handle := ref
	if ref == "" {
		handle = m.ID // a protected tool's result has no ref
	}
	var text string
	total, over, ok := 0, false, false
	if h.opts.CountSplitsAtLines {
		var n int
		text, n, total, over, ok = h.piecewiseCut(m.Text, limit, budget, func(from, to int) string {
			return strings.TrimLeft(cutNote(from, to, len(m.Text), h.opts.RecallTool(), handle), "\n")
		})
		if ok && !over {
			h.count.seed(m.Text, total)
			return nil
		}
		if ok {
			h.count.seed(text, n)
		}
	}
	if !ok {
		if total, over = h.measure(m.Text, limit); !over {
			return nil
		}
		tool := h.opts.RecallTool()
		text = noa.CutMiddle(m.Text, total, budget, h.count.count, func(from, to, size int) string {
			return cutNote(from, to, size, tool, handle)
		})
	}
	rel, err := ResultsDir+"/"+m.ID+".txt", error(nil)
	if !dry {
		rel, err = h.arch.WriteResult(m.ID, m.Text)
	}
	if err != nil {
		h.log.Error("archiving an oversize result; keeping it whole", zap.String("tool", m.ToolName), zap.Int("tokens", total), zap.Error(err))
		return nil
	}
	return &cutText{text: text, rel: rel, ref: ref}
}

// nextRef is the ref noa will give m, about to join the stream after the
// batch's messages from n0 on: refs are given in order, one to each
// message that is neither protected nor noa's own, so it follows the last
// ref given before the batch, skipping the batch's messages before it that
// take one. "" when m will have none.
func (h *Host) nextRef(m noa.CoreMessage, n0 int) string {
	h.learnRefsUpTo(n0)
	if noa.IsMessageProtected(m, h.cfg) {
		return ""
	}
	next := h.refNext
	for _, p := range h.msgs[n0:] {
		if !noa.IsMessageProtected(p, h.cfg) && p.ID != noa.NudgeMessageID {
			next++
		}
	}
	return noa.IndexToRef(next)
}

// measureChunk is the size of the pieces measure counts a large text in.
const measureChunk = 16 << 10

// measure tells whether text is over limit tokens and gives its size in
// tokens: exact when it is not over or is close to the limit, otherwise an
// estimate from the part counted. A text of no more bytes than limit fits
// uncounted (a token is at least one byte). A larger one is counted in
// pieces split at line ends (where the tokenizer splits anyway), stopping
// once the pieces hold clearly more than limit tokens (a twentieth more:
// splitting moves a count by a token or two per piece), so a 5 MB payload
// costs the tokenizer about limit tokens' worth of text, not 5 MB.
func (h *Host) measure(text string, limit int) (tokens int, over bool) {
	sum, at := 0, 0
	for at < len(text) {
		end := len(text)
		if at+measureChunk < len(text) {
			if end = noa.CutBack(text, at+measureChunk); end <= at {
				end = at + measureChunk
				for end < len(text) && !utf8.RuneStart(text[end]) {
					end++
				}
			}
		}
		sum += h.opts.Count(text[at:end])
		at = end
		if sum > limit+limit/20 {
			// The rest at the density of what was counted.
			return int(int64(sum) * int64(len(text)) / int64(at)), true
		}
	}
	n := h.count.count(text) // near the limit: count it whole, exactly
	return n, n > limit
}

func cutNote(from, to, size int, tool, handle string) string {
	return fmt.Sprintf("\n\n%s: bytes %d-%d of %d were cut from the middle of this result. The original is archived verbatim; "+
		"read the cut part with %s {\"ref\":%q,\"offset\":%d,\"limit\":%d}; if the answer comes in pages, continue from the offset each page names until byte %d.]\n\n",
		noa.TruncationMarker, from, to, size, tool, handle, from, to-from, to)
}
