package noa

import (
	"fmt"
	"strings"
)

// BoundaryKind records whether a range was given in message refs or block
// ids, which decides the tier of the block it makes.
type BoundaryKind string

const (
	// BoundaryMessage: both ends are message refs, so plain conversation
	// becomes a new tier-1 block.
	BoundaryMessage BoundaryKind = "message"
	// BoundaryBlock: one end or both name a block, so earlier blocks are
	// merged one tier up. The batch minimum-size check skips these, since
	// merging is worth doing even when little raw text is involved.
	BoundaryBlock BoundaryKind = "block"
)

// BoundaryNotFoundKind classifies an endpoint that did not resolve, so the
// model can be told the specific fix.
type BoundaryNotFoundKind string

const (
	// NotFoundUnknown: the ref names nothing in this session.
	NotFoundUnknown BoundaryNotFoundKind = "unknown"
	// NotFoundConsumed: the ref existed, but a block has already swallowed
	// what it pointed at.
	NotFoundConsumed BoundaryNotFoundKind = "consumed"
	// NotFoundInvalid: the string parses as neither a ref nor a block id.
	NotFoundInvalid BoundaryNotFoundKind = "invalid"
)

// BoundaryNotFoundError reports an endpoint that did not resolve, the
// reason, and the advice shown to the model.
type BoundaryNotFoundError struct {
	Ref  string
	Kind BoundaryNotFoundKind
	Msg  string
}

func (e *BoundaryNotFoundError) Error() string { return e.Msg }

func notFound(ref string, kind BoundaryNotFoundKind, block string) *BoundaryNotFoundError {
	var msg string
	switch kind {
	case NotFoundUnknown:
		msg = fmt.Sprintf("%s does not name any message or block in this conversation. "+
			"Copy endpoints exactly from the message tags (mNNNNN) or the block map (bN); "+
			"refs are never renumbered, so one you cannot see does not exist.", strings.TrimSpace(ref))
	case NotFoundConsumed:
		if block != "" {
			msg = fmt.Sprintf("%s is already compressed: its content lives in block %s. "+
				"Do not compress it again. To consolidate summaries, use block ids such as %s "+
				"as endpoints, and only when the context manager asks for a tier-2/3 pass.",
				strings.TrimSpace(ref), block, block)
		} else {
			msg = fmt.Sprintf("%s is no longer in the visible conversation (already compressed or removed). "+
				"Pick endpoints from the messages and blocks you can currently see.", strings.TrimSpace(ref))
		}
	default:
		msg = fmt.Sprintf("%q is neither a message ref nor a block id. Write message refs as mNNNNN "+
			"(for example m00042) and blocks as bN (for example b3).", ref)
	}
	return &BoundaryNotFoundError{Ref: ref, Kind: kind, Msg: msg}
}

// ResolvedRange is a requested range located in the current view.
type ResolvedRange struct {
	StartIndex int
	EndIndex   int
	Kind       BoundaryKind
	// MessageIDs lists the real messages in [StartIndex, EndIndex]; the
	// synthetic summary and nudge entries are left out.
	MessageIDs []string
	// NestedBlockIDs: live blocks anchored within the span, which the new
	// block will absorb.
	NestedBlockIDs []string
	// Warnings tells the model when an endpoint was moved out to the edge
	// of the block covering it.
	Warnings []string
}

// ResolveBoundaries finds a requested range inside messages, which must be
// the same view the model addressed.
//
// Reversed endpoints are swapped. A message ref whose message is covered by
// an active block is snapped to that block's extent with a warning; when both
// endpoints fall inside the same block the request is NotFoundConsumed (it
// asks to compress something twice). The span is then widened so it never
// cuts a tool exchange or a reasoning run off its act.
func ResolveBoundaries(startRef, endRef string, messages []CoreMessage, state CompressionState) (ResolvedRange, *BoundaryNotFoundError) {
	return newResolver(messages, state).resolve(startRef, endRef)
}

// resolver holds the per-view indexes ResolveBoundaries needs, so a call
// with many ranges builds them once.
type resolver struct {
	messages []CoreMessage
	state    CompressionState
	pos      map[string]int
	cover    map[string]string
}

func newResolver(messages []CoreMessage, state CompressionState) *resolver {
	pos := make(map[string]int, len(messages))
	for i, m := range messages {
		pos[m.ID] = i
	}
	return &resolver{messages: messages, state: state, pos: pos, cover: coveringBlock(state)}
}

func (rv *resolver) resolve(startRef, endRef string) (ResolvedRange, *BoundaryNotFoundError) {
	messages, state, pos, cover := rv.messages, rv.state, rv.pos, rv.cover
	var res ResolvedRange
	res.Kind = BoundaryMessage

	type endpoint struct {
		lo, hi  int
		snapped string
	}
	blockExtent := func(id string) (int, int, bool) {
		if i, ok := pos[SummaryMessageID(id)]; ok {
			return i, i, true
		}
		b := FindBlock(&state, id)
		if b == nil {
			return 0, 0, false
		}
		lo, hi := -1, -1
		for _, mid := range b.EffectiveMessageIDs {
			if i, ok := pos[mid]; ok {
				if lo < 0 || i < lo {
					lo = i
				}
				if i > hi {
					hi = i
				}
			}
		}
		return lo, hi, lo >= 0
	}
	resolve := func(ref string) (endpoint, *BoundaryNotFoundError) {
		b, ok := ParseBoundary(ref)
		if !ok {
			return endpoint{}, notFound(ref, NotFoundInvalid, "")
		}
		if b.Kind == BoundaryBlock {
			res.Kind = BoundaryBlock
			blk := FindBlock(&state, b.BlockID)
			if blk == nil {
				return endpoint{}, notFound(ref, NotFoundUnknown, "")
			}
			if !blk.Active {
				return endpoint{}, notFound(ref, NotFoundConsumed, absorberOf(state, blk.BlockID))
			}
			lo, hi, ok := blockExtent(blk.BlockID)
			if !ok {
				return endpoint{}, notFound(ref, NotFoundConsumed, "")
			}
			return endpoint{lo: lo, hi: hi}, nil
		}
		raw, ok := state.MessageRefs.ByRef[b.Ref]
		if !ok {
			return endpoint{}, notFound(ref, NotFoundUnknown, "")
		}
		if i, ok := pos[raw]; ok {
			return endpoint{lo: i, hi: i}, nil
		}
		if blk := cover[raw]; blk != "" {
			if lo, hi, ok := blockExtent(blk); ok {
				return endpoint{lo: lo, hi: hi, snapped: blk}, nil
			}
			return endpoint{}, notFound(ref, NotFoundConsumed, blk)
		}
		return endpoint{}, notFound(ref, NotFoundConsumed, "")
	}

	s, err := resolve(startRef)
	if err != nil {
		return ResolvedRange{}, err
	}
	e, err := resolve(endRef)
	if err != nil {
		return ResolvedRange{}, err
	}
	if s.snapped != "" && s.snapped == e.snapped {
		return ResolvedRange{}, notFound(startRef, NotFoundConsumed, s.snapped)
	}
	for _, p := range []struct {
		ref string
		ep  endpoint
	}{{startRef, s}, {endRef, e}} {
		if p.ep.snapped != "" {
			res.Warnings = append(res.Warnings, fmt.Sprintf(
				"%s is inside block %s; the range boundary was moved to include the whole block.",
				strings.TrimSpace(p.ref), p.ep.snapped))
		}
	}
	start, end := min(s.lo, e.lo), max(s.hi, e.hi)
	start, end = ApplyPairBoundaryAdjustments(start, end, messages)
	res.StartIndex, res.EndIndex = start, end

	seen := map[string]bool{}
	for i := start; i <= end; i++ {
		m := messages[i]
		if id, ok := BlockIDFromSummaryID(m.ID); ok && isRenderedSummaryMessage(m) {
			if blk := FindBlock(&state, id); blk != nil && blk.Active && !seen[id] {
				seen[id] = true
				res.NestedBlockIDs = append(res.NestedBlockIDs, id)
			}
			continue
		}
		if isSynthetic(m) {
			continue
		}
		res.MessageIDs = append(res.MessageIDs, m.ID)
		// An unpruned view still holds covered messages; their block is
		// nested just as if its summary stood there.
		if blk := cover[m.ID]; blk != "" && !seen[blk] {
			seen[blk] = true
			res.NestedBlockIDs = append(res.NestedBlockIDs, blk)
		}
	}
	return res, nil
}

// absorberOf names the active block that (transitively) absorbed id.
func absorberOf(state CompressionState, id string) string {
	parent := map[string]string{}
	for _, b := range state.Blocks {
		for _, c := range b.DirectBlockIDs {
			parent[c] = b.BlockID
		}
	}
	cur := id
	for range len(state.Blocks) + 1 {
		p, ok := parent[cur]
		if !ok {
			break
		}
		cur = p
		if b := FindBlock(&state, cur); b != nil && b.Active {
			return cur
		}
	}
	return ""
}

func isAssistantAct(m CoreMessage) bool {
	return m.Role == RoleAssistant && (m.ContentType == CTText || m.ContentType == CTToolCall)
}

func isReasoning(m CoreMessage) bool {
	return m.ContentType == CTReasoning
}

// AdjustBoundariesForToolPairs grows [start, end] until every tool call in it
// has its result in it and vice versa: providers reject a lone half. Each
// direction scans at most maxScan messages and halts at the first one outside
// the exchange, because an exchange's messages are adjacent. Compress calls
// are ignored here; hide-compress-calls deals with them (they are
// hard-protected).
func AdjustBoundariesForToolPairs(start, end int, msgs []CoreMessage, maxScan int) (int, int) {
	if len(msgs) == 0 {
		return start, end
	}
	start, end = clampRange(start, end, len(msgs))
	if maxScan <= 0 {
		maxScan = ToolPairMaxScan
	}
	inCalls := map[string]bool{}
	inResults := map[string]bool{}
	for i := start; i <= end; i++ {
		m := msgs[i]
		if m.ToolCallID == "" || m.ToolName == CompressToolName {
			continue
		}
		switch m.ContentType {
		case CTToolCall:
			inCalls[m.ToolCallID] = true
		case CTToolResult:
			inResults[m.ToolCallID] = true
		}
	}
	// Forward: calls inside whose results are outside.
	pending := map[string]bool{}
	for id := range inCalls {
		if !inResults[id] {
			pending[id] = true
		}
	}
	if len(pending) > 0 {
		limit := min(len(msgs)-1, end+maxScan)
		for j := end + 1; j <= limit && len(pending) > 0; j++ {
			m := msgs[j]
			switch {
			case m.ContentType == CTToolResult && pending[m.ToolCallID]:
				delete(pending, m.ToolCallID)
			case m.Role == RoleAssistant && (m.ContentType == CTToolCall || isReasoning(m) || m.ContentType == CTText) && m.ToolName != CompressToolName:
				// Same assistant burst: parallel calls come before results.
				if m.ContentType == CTToolCall && m.ToolCallID != "" {
					pending[m.ToolCallID] = true
				}
			default:
				j = limit + 1
				continue
			}
			end = j
		}
	}
	// Backward: results inside whose calls are outside.
	pending = map[string]bool{}
	for id := range inResults {
		if !inCalls[id] {
			pending[id] = true
		}
	}
	if len(pending) > 0 {
		limit := max(0, start-maxScan)
		for j := start - 1; j >= limit && len(pending) > 0; j-- {
			m := msgs[j]
			switch {
			case m.ContentType == CTToolCall && pending[m.ToolCallID]:
				delete(pending, m.ToolCallID)
			case m.ContentType == CTToolResult && m.ToolName != CompressToolName && m.ToolCallID != "":
				pending[m.ToolCallID] = true
			case m.ContentType == CTToolCall && m.ToolName != CompressToolName:
				// Another call of the same burst whose result is inside.
			default:
				j = limit - 1
				continue
			}
			start = j
		}
	}
	return start, end
}

// AdjustBoundariesForReasoningPairs grows [start, end] so that reasoning is
// never separated from the assistant output it led to: touching any part of
// a group's reasoning or acts pulls in the rest of them.
func AdjustBoundariesForReasoningPairs(start, end int, msgs []CoreMessage) (int, int) {
	if len(msgs) == 0 {
		return start, end
	}
	start, end = clampRange(start, end, len(msgs))
	if g, ok := reasoningGroupAround(msgs, start); ok {
		first, last := groupCore(g)
		if start > first && start <= last {
			start = first
		}
	}
	if g, ok := reasoningGroupAround(msgs, end); ok {
		first, last := groupCore(g)
		if end >= first && end < last {
			end = last
		}
	}
	return start, end
}

// groupCore spans a group's reasoning run and acts (results excluded).
func groupCore(g TurnGroup) (int, int) {
	first, last := g.ReasoningIdx[0], g.ReasoningIdx[len(g.ReasoningIdx)-1]
	for _, a := range g.ActIdx {
		first, last = min(first, a), max(last, a)
	}
	return first, last
}

// reasoningGroupAround computes the turn group containing index i from a
// bounded window around it, so the cost does not grow with the
// conversation; ok only when that group opens with reasoning. A window
// without reasoning (a session of plain tool calls) is not grouped at all.
func reasoningGroupAround(msgs []CoreMessage, i int) (TurnGroup, bool) {
	w := 4 * ToolPairMaxScan
	lo, hi := max(0, i-w), min(len(msgs), i+w+1)
	if !hasReasoning(msgs[lo:hi]) {
		return TurnGroup{}, false
	}
	for _, g := range ComputeTurnGroups(msgs[lo:hi]) {
		if containsIdx(g, i-lo) {
			return offsetGroup(g, lo), len(g.ReasoningIdx) > 0
		}
	}
	return TurnGroup{}, false
}

// hasReasoning reports a message that would open or extend a turn group's
// reasoning run; without one, no group of msgs has reasoning.
func hasReasoning(msgs []CoreMessage) bool {
	for _, m := range msgs {
		if m.Role == RoleAssistant && isReasoning(m) {
			return true
		}
	}
	return false
}

func containsIdx(g TurnGroup, i int) bool {
	for _, s := range [][]int{g.ReasoningIdx, g.ActIdx, g.ResultIdx} {
		for _, x := range s {
			if x == i {
				return true
			}
		}
	}
	return false
}

func offsetGroup(g TurnGroup, off int) TurnGroup {
	shift := func(s []int) []int {
		out := make([]int, len(s))
		for i, x := range s {
			out[i] = x + off
		}
		return out
	}
	return TurnGroup{ReasoningIdx: shift(g.ReasoningIdx), ActIdx: shift(g.ActIdx), ResultIdx: shift(g.ResultIdx)}
}

func clampRange(start, end, n int) (int, int) {
	if start > end {
		start, end = end, start
	}
	start = max(0, min(start, n-1))
	end = max(0, min(end, n-1))
	return start, end
}

// ApplyPairBoundaryAdjustments runs both widenings until neither changes the
// range. The spec observes that two rounds always suffice; we loop to a true
// fixed point but cap it at four rounds so a pathological view cannot spin
// (each round only widens, within a bounded scan).
func ApplyPairBoundaryAdjustments(start, end int, msgs []CoreMessage) (int, int) {
	if len(msgs) == 0 {
		return start, end
	}
	start, end = clampRange(start, end, len(msgs))
	for range 4 {
		s, e := AdjustBoundariesForToolPairs(start, end, msgs, ToolPairMaxScan)
		s, e = AdjustBoundariesForReasoningPairs(s, e, msgs)
		if s == start && e == end {
			break
		}
		start, end = s, e
	}
	return start, end
}

// TurnGroup is a single assistant turn in the shape providers validate:
// thinking first, then what the assistant said or called, then the results
// of those calls.
type TurnGroup struct {
	// ReasoningIdx: positions of the thinking messages that open the turn.
	ReasoningIdx []int
	// ActIdx: positions of assistant text and tool-call messages.
	ActIdx []int
	// ResultIdx: positions of the results answering those calls.
	ResultIdx []int
}

// ComputeTurnGroups splits the view into TurnGroups. A new group
// starts at reasoning that follows an act, or at an assistant message that
// follows a user message, a tool result or a synthetic message. Groups
// without reasoning are returned too, so callers see the whole structure.
func ComputeTurnGroups(msgs []CoreMessage) []TurnGroup {
	var groups []TurnGroup
	cur := -1
	owner := map[string]int{}
	for i, m := range msgs {
		switch {
		case isSynthetic(m):
			cur = -1
		case m.Role == RoleAssistant && isReasoning(m):
			if cur < 0 || len(groups[cur].ActIdx) > 0 || len(groups[cur].ResultIdx) > 0 {
				groups = append(groups, TurnGroup{})
				cur = len(groups) - 1
			}
			groups[cur].ReasoningIdx = append(groups[cur].ReasoningIdx, i)
		case isAssistantAct(m):
			if cur < 0 || len(groups[cur].ResultIdx) > 0 {
				groups = append(groups, TurnGroup{})
				cur = len(groups) - 1
			}
			groups[cur].ActIdx = append(groups[cur].ActIdx, i)
			if m.ContentType == CTToolCall && m.ToolCallID != "" {
				owner[m.ToolCallID] = cur
			}
		case m.ContentType == CTToolResult:
			if g, ok := owner[m.ToolCallID]; ok {
				groups[g].ResultIdx = append(groups[g].ResultIdx, i)
			}
		default:
			cur = -1
		}
	}
	return groups
}

// WithdrawSplitTurns removes from folded (a set of message ids about to be
// compressed) every turn group whose reasoning would be folded while one of
// its acts stays visible. It returns the surviving set (a copy) and the ids
// withdrawn, in view order. (The spec calls them "indices"; ids are what
// the folded set is keyed by.)
func WithdrawSplitTurns(msgs []CoreMessage, folded map[string]bool) (map[string]bool, []string) {
	out := make(map[string]bool, len(folded))
	for k, v := range folded {
		out[k] = v
	}
	var withdrawn []string
	for _, g := range ComputeTurnGroups(msgs) {
		if len(g.ReasoningIdx) == 0 {
			continue
		}
		reasoningFolded := false
		for _, i := range g.ReasoningIdx {
			if out[msgs[i].ID] {
				reasoningFolded = true
			}
		}
		actVisible := false
		for _, i := range g.ActIdx {
			if !out[msgs[i].ID] {
				actVisible = true
			}
		}
		if !reasoningFolded || !actVisible {
			continue
		}
		all := append(append(append([]int(nil), g.ReasoningIdx...), g.ActIdx...), g.ResultIdx...)
		for _, i := range all {
			if out[msgs[i].ID] {
				delete(out, msgs[i].ID)
				withdrawn = append(withdrawn, msgs[i].ID)
			}
		}
	}
	return out, withdrawn
}
