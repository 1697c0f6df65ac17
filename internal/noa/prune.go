package noa

import (
	"encoding/json"
	"strings"
)

// RenderSummaryMessage makes the message shown where a block's span used to
// be: the header with the block's id, tier and actual span, the model's
// summary verbatim, and the archive pointer.
func RenderSummaryMessage(b CompressionBlock) CoreMessage {
	var sb strings.Builder
	sb.WriteString(SummaryHeader)
	sb.WriteString(" ")
	sb.WriteString(blockLabel(b))
	if b.StartRef != "" {
		sb.WriteString(" " + b.StartRef + "–" + b.EndRef)
	}
	if b.Topic != "" {
		sb.WriteString(" — " + b.Topic)
	}
	sb.WriteString("\n")
	sb.WriteString(b.Summary)
	sb.WriteString("\n")
	sb.WriteString(ArchiveTag(b))
	return CoreMessage{
		ID:          SummaryMessageID(b.BlockID),
		Role:        RoleUser,
		ContentType: CTText,
		Text:        sb.String(),
	}
}

func blockLabel(b CompressionBlock) string {
	return b.BlockID + "(T" + itoa(int(b.Tier)) + ")"
}

// isRenderedSummaryMessage checks id prefix, role, content type and header
// all at once. A host message that merely had a matching id would otherwise
// be taken for ours and thrown away without notice.
func isRenderedSummaryMessage(m CoreMessage) bool {
	return strings.HasPrefix(m.ID, SummaryIDPrefix) && m.Role == RoleUser &&
		m.ContentType == CTText && strings.HasPrefix(m.Text, SummaryHeader)
}

// prune hides every covered message, puts each active block's summary where
// its first covered message was, and strips orphaned tool results. Stale
// rendered summaries and nudges in the input are dropped first (they are
// re-rendered from state). The result is a fresh slice.
func prune(msgs []CoreMessage, state CompressionState) []CoreMessage {
	out, _, _ := pruneIndexed(msgs, state, false)
	return out
}

// pruneIndexed is prune that can also report, for each entry of the view,
// the index in msgs it came from (-1 for a rendered summary), and the call
// ids of the tool calls a block hid. The Engine keeps both to extend the
// view without pruning again; ProcessTurn does not track them.
func pruneIndexed(msgs []CoreMessage, state CompressionState, track bool) ([]CoreMessage, []int, map[string]bool) {
	cover := coveringBlock(state)
	byID := map[string]CompressionBlock{}
	for _, b := range state.Blocks {
		if b.Active {
			byID[b.BlockID] = b
		}
	}
	out := make([]CoreMessage, 0, len(msgs))
	var src []int
	if track {
		src = make([]int, 0, len(msgs))
	}
	placed := map[string]bool{}
	hiddenCalls := map[string]bool{}
	for i, m := range msgs {
		if isSynthetic(m) {
			continue
		}
		if blk, ok := cover[m.ID]; ok {
			if m.ContentType == CTToolCall && m.ToolCallID != "" {
				hiddenCalls[m.ToolCallID] = true
			}
			if !placed[blk] {
				placed[blk] = true
				out = append(out, RenderSummaryMessage(byID[blk]))
				if track {
					src = append(src, -1)
				}
			}
			continue
		}
		out = append(out, m)
		if track {
			src = append(src, i)
		}
	}
	out, src = stripOrphans(out, src, hiddenCalls)
	return out, src, hiddenCalls
}

// stripOrphans drops tool results whose call is not in the view (a provider
// rejects a result without its call) and tool calls whose result was hidden
// by a block. A call with no result anywhere is kept: it may be in flight.
// Compress exchanges are exempt; hide-compress-calls owns them. src, when
// not nil, is filtered alongside msgs.
func stripOrphans(msgs []CoreMessage, src []int, hiddenCalls map[string]bool) ([]CoreMessage, []int) {
	calls := map[string]bool{}
	for _, m := range msgs {
		if m.ContentType == CTToolCall && m.ToolCallID != "" {
			calls[m.ToolCallID] = true
		}
	}
	out := msgs[:0:0]
	var osrc []int
	if src != nil {
		osrc = src[:0:0]
	}
	for i, m := range msgs {
		if m.ToolName != CompressToolName {
			if m.ContentType == CTToolResult && m.ToolCallID != "" && !calls[m.ToolCallID] {
				continue
			}
			if m.ContentType == CTToolCall && m.ToolCallID != "" && hiddenCalls[m.ToolCallID] {
				continue
			}
		}
		out = append(out, m)
		if src != nil {
			osrc = append(osrc, src[i])
		}
	}
	return out, osrc
}

// hideCompressCalls manages the Compress exchanges in the view (the
// hide-consumed-compress-calls stage). A call whose blocks were all absorbed
// by a higher tier is consumed: it and its result are hidden, since the
// absorbing block carries its content. A call that formed an active block
// stays, with each summary argument stubbed to SummaryStubChars: the full
// text is already in the rendered summary message, and sending it twice
// would grow the context with every compression. A call that formed no block
// stays only if it is among the last KeepLastOrphaned such calls (one that
// just failed must stay so the model can read the correction). Hidden calls
// take their results with them.
func hideCompressCalls(msgs []CoreMessage, state CompressionState) []CoreMessage {
	out, _ := hideCompressCallsIndexed(msgs, nil, state, nil)
	return out
}

// hideCompressCallsIndexed is hideCompressCalls filtering src (when not nil)
// alongside msgs. stub, when not nil, replaces stubCompressArgs for the
// entry at a given index, so a caller that keeps the stubbed arguments need
// not parse them again.
func hideCompressCallsIndexed(msgs []CoreMessage, src []int, state CompressionState, stub func(i int, text string) string) ([]CoreMessage, []int) {
	active := map[string]bool{}
	formed := map[string]bool{}
	for _, b := range state.Blocks {
		if b.CompressCallID == "" {
			continue
		}
		formed[b.CompressCallID] = true
		if b.Active {
			active[b.CompressCallID] = true
		}
	}
	var orphans []string
	for _, m := range msgs {
		if m.ContentType == CTToolCall && m.ToolName == CompressToolName && !formed[m.ToolCallID] {
			orphans = append(orphans, m.ToolCallID)
		}
	}
	hidden := map[string]bool{}
	for id := range formed {
		if !active[id] {
			hidden[id] = true
		}
	}
	if len(orphans) > KeepLastOrphaned {
		for _, id := range orphans[:len(orphans)-KeepLastOrphaned] {
			hidden[id] = true
		}
	}
	compressCalls := map[string]bool{}
	for _, m := range msgs {
		if m.ContentType == CTToolCall && m.ToolName == CompressToolName {
			compressCalls[m.ToolCallID] = true
		}
	}
	out := make([]CoreMessage, 0, len(msgs))
	var osrc []int
	if src != nil {
		osrc = make([]int, 0, len(src))
	}
	for i, m := range msgs {
		isCompress := m.ToolName == CompressToolName || (m.ContentType == CTToolResult && compressCalls[m.ToolCallID])
		if isCompress {
			if hidden[m.ToolCallID] {
				continue
			}
			if m.ContentType == CTToolCall && active[m.ToolCallID] {
				if stub != nil {
					m.Text = stub(i, m.Text)
				} else {
					m.Text = stubCompressArgs(m.Text)
				}
			}
		}
		out = append(out, m)
		if src != nil {
			osrc = append(osrc, src[i])
		}
	}
	return out, osrc
}

// stubCompressArgs cuts every summary in a Compress call's JSON arguments to
// SummaryStubChars runes. Unparseable arguments are cut as a whole.
func stubCompressArgs(text string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		return stubString(text)
	}
	if items, ok := obj["content"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if s, ok := m["summary"].(string); ok {
					m["summary"] = stubString(s)
				}
			}
		}
	} else if s, ok := obj["content"].(string); ok {
		obj["content"] = stubString(s)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return stubString(text)
	}
	return string(b)
}

func stubString(s string) string {
	r := []rune(s)
	if len(r) <= SummaryStubChars {
		return s
	}
	return string(r[:SummaryStubChars]) + "… [cut here; the full summary is in the block's summary message]"
}

// RunPruneOnly keeps refs up to date and replaces covered spans by their
// summaries, and does nothing else: no nudge, no truncation, no hiding. With
// noa disabled the host still calls it, so earlier compressions keep their
// effect instead of the full history coming back.
func RunPruneOnly(msgs []CoreMessage, state CompressionState, cfg Config) ([]CoreMessage, CompressionState) {
	st := CloneState(state)
	st = syncRefs(msgs, st, cfg, nil)
	return prune(msgs, st), st
}

// ProjectView is the view a Compress call must be resolved against: refs
// synced, covered content pruned, orphans stripped and Compress calls
// managed, but nothing truncated and no nudge. It is what ProcessTurn
// produces before its pressure stages, and what RebuildStateFromLog replays
// against; a host passing the same view to ApplyCompression gets a
// reproducible state. (Not in the spec; see ApplyInput.Messages.)
func ProjectView(msgs []CoreMessage, state CompressionState, cfg Config) []CoreMessage {
	st := syncRefs(msgs, CloneState(state), cfg, nil)
	return hideCompressCalls(prune(msgs, st), st)
}

// ProjectedTokenCount estimates the size of this turn's request: the
// ProjectView result, before emergency truncation. The raw history would be
// the wrong thing to count: it never shrinks, so compression would seem not
// to help and the pressure logic would stay stuck at the top.
func ProjectedTokenCount(msgs []CoreMessage, state CompressionState, cfg Config, count TokenCountFn) int {
	count = countFn(count)
	total := 0
	for _, m := range ProjectView(msgs, state, cfg) {
		total += CountMessageTokens(m, count)
	}
	return total
}
