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
	var hard map[string]bool
	res, _ := truncateWith(msgs, tokenCount, cfg, count, func(i int) (int, bool) {
		if hard == nil {
			hard = hardProtectedIDs(msgs, cfg)
		}
		m := msgs[i]
		if hard[m.ID] || containsMarker(m.Text) {
			return 0, false
		}
		return CountMessageTokens(m, count), true
	})
	return res
}

// truncateWith is TruncateLargeToolOutputs with the per-message facts
// supplied: cand reports a tool result's size and whether it may be cut at
// all (neither hard-protected nor already cut); it is asked only about tool
// results other than Compress's. It also returns the indices it cut.
func truncateWith(msgs []CoreMessage, tokenCount int, cfg Config, count TokenCountFn, cand func(i int) (int, bool)) (TruncateResult, []int) {
	res := TruncateResult{Messages: msgs}
	limit := cfg.ModelContextLimit
	th := cfg.Truncate.Threshold
	if limit <= 0 || th <= 0 || float64(tokenCount) < th*float64(limit) {
		return res, nil
	}
	target := int(0.9 * th * float64(limit))
	need := tokenCount - target
	type candidate struct{ idx, tokens int }
	var cands []candidate
	for i, m := range msgs {
		if m.ContentType != CTToolResult || m.ToolName == CompressToolName {
			continue
		}
		if n, ok := cand(i); ok && n > truncateKeepTokens*2 {
			cands = append(cands, candidate{i, n})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].tokens > cands[b].tokens })
	var out []CoreMessage
	var cut []int
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
