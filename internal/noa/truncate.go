package noa

import (
	"fmt"
	"sort"
	"strings"
)

// TruncateResult reports what the valve did.
type TruncateResult struct {
	Messages       []CoreMessage
	TruncatedCount int
	SavedTokens    int
}

// truncateKeepTokens is the least a shortened tool result keeps.
const truncateKeepTokens = 400

// TruncateLargeToolOutputs is the mechanical last resort: once tokenCount
// reaches Truncate.Threshold of the window, the largest tool results are cut
// to head and tail (largest first) until the projected size is back under 90%
// of the threshold. It rewrites only what is sent: msgs is not modified, a
// fresh slice is returned, message ids are unchanged, and since the stored
// history keeps the originals the cut lifts by itself once usage falls.
// Compress exchanges, hard-protected tools and results already cut are left
// alone.
func TruncateLargeToolOutputs(msgs []CoreMessage, tokenCount int, cfg Config, count TokenCountFn) TruncateResult {
	count = countFn(count)
	res := TruncateResult{Messages: msgs}
	limit := cfg.ModelContextLimit
	th := cfg.Truncate.Threshold
	if limit <= 0 || th <= 0 || float64(tokenCount) < th*float64(limit) {
		return res
	}
	target := int(0.9 * th * float64(limit))
	need := tokenCount - target
	hard := hardProtectedIDs(msgs, cfg)
	type cand struct{ idx, tokens int }
	var cands []cand
	for i, m := range msgs {
		if m.ContentType != CTToolResult || m.ToolName == CompressToolName || hard[m.ID] || containsMarker(m.Text) {
			continue
		}
		if n := CountMessageTokens(m, count); n > truncateKeepTokens*2 {
			cands = append(cands, cand{i, n})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].tokens > cands[b].tokens })
	var out []CoreMessage
	for _, c := range cands {
		if need <= 0 {
			break
		}
		if out == nil {
			out = cloneMessages(msgs)
		}
		m := out[c.idx]
		// The marker itself costs tokens; budget for it so one cut suffices
		// where one can.
		keep := max(truncateKeepTokens, c.tokens-need-count(truncationNote(len(m.Text)))-16)
		m.Text = cutMiddle(m.Text, keep, c.tokens)
		saved := c.tokens - CountMessageTokens(m, count)
		if saved <= 0 {
			continue
		}
		out[c.idx] = m
		need -= saved
		res.SavedTokens += saved
		res.TruncatedCount++
	}
	if out != nil {
		res.Messages = out
	}
	return res
}

func containsMarker(s string) bool { return strings.Contains(s, TruncationMarker) }

// cutMiddle keeps roughly keep/total of text: two thirds from the head, one
// third from the tail, joined by the truncation marker.
func cutMiddle(text string, keep, total int) string {
	r := []rune(text)
	if total <= 0 || keep >= total {
		return text
	}
	k := len(r) * keep / total
	head := k * 2 / 3
	tail := k - head
	removed := len(r) - head - tail
	return string(r[:head]) + truncationNote(removed) + string(r[len(r)-tail:])
}

func truncationNote(removed int) string {
	return fmt.Sprintf("\n%s: %d characters removed from the middle of this output. The full output is kept in the history; do not re-run the tool to see it.]\n", TruncationMarker, removed)
}
