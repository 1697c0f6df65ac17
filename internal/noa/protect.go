package noa

import "strings"

// MatchToolPattern compares a tool name with a pattern from the config,
// ignoring case. A pattern ending in one "*" matches any name that starts
// with the rest; otherwise the whole name must match.
func MatchToolPattern(pattern, toolName string) bool {
	p := strings.ToLower(strings.TrimSpace(pattern))
	t := strings.ToLower(strings.TrimSpace(toolName))
	if p == "" || t == "" {
		return false
	}
	if strings.HasSuffix(p, "*") {
		prefix := strings.TrimSuffix(p, "*")
		if strings.Contains(prefix, "*") {
			return false // only a single trailing wildcard is supported
		}
		return strings.HasPrefix(t, prefix)
	}
	return p == t
}

// isToolNameProtected reports whether a tool is hard-protected.
func isToolNameProtected(name string, cfg Config) bool {
	if name == "" {
		return false
	}
	for _, p := range AlwaysProtectedTools {
		if MatchToolPattern(p, name) {
			return true
		}
	}
	for _, p := range cfg.ProtectedTools {
		if MatchToolPattern(p, name) {
			return true
		}
	}
	return cfg.IsToolProtected != nil && cfg.IsToolProtected(name)
}

// IsMessageProtected is true for messages that may never be compressed
// (hard protection), because their tool is
// in AlwaysProtectedTools, Config.ProtectedTools or accepted by
// Config.IsToolProtected. Such messages are excluded from every range and
// never get a ref. (The soft recent zone is ComputeProtectedRefs.)
func IsMessageProtected(m CoreMessage, cfg Config) bool {
	if m.ContentType != CTToolCall && m.ContentType != CTToolResult {
		return false
	}
	return isToolNameProtected(m.ToolName, cfg)
}

// hardProtectedIDs extends IsMessageProtected across tool pairs: a result
// whose call is protected is protected too, even when the host did not copy
// the tool name onto the result.
func hardProtectedIDs(msgs []CoreMessage, cfg Config) map[string]bool {
	out := map[string]bool{}
	calls := map[string]bool{}
	for _, m := range msgs {
		if IsMessageProtected(m, cfg) {
			out[m.ID] = true
			if m.ContentType == CTToolCall && m.ToolCallID != "" {
				calls[m.ToolCallID] = true
			}
		}
	}
	if len(calls) == 0 {
		return out
	}
	for _, m := range msgs {
		if m.ContentType == CTToolResult && calls[m.ToolCallID] {
			out[m.ID] = true
		}
	}
	return out
}

// IsNeverPreserveRecentTool is true when m comes from one of the
// NeverPreserveRecentTools; the recent zone does not count such messages,
// so they remain open to compression.
func IsNeverPreserveRecentTool(m CoreMessage) bool {
	if m.ToolName == "" {
		return false
	}
	for _, t := range NeverPreserveRecentTools {
		if MatchToolPattern(t, m.ToolName) {
			return true
		}
	}
	return false
}

// isSynthetic reports messages noa itself renders: summaries and the nudge.
func isSynthetic(m CoreMessage) bool {
	return m.ID == NudgeMessageID || isRenderedSummaryMessage(m)
}

// ComputeProtectedRefs returns the soft-protected refs: the newest part of
// the view, which the work in progress most likely still reads, and the
// latest user message, and the first user message (firstUserSpan). From
// the end backwards it protects messages until both
// PreserveRecentMessages slots and PreserveRecentTokens are filled; messages
// of NeverPreserveRecentTools take no slot and stay compressible (unless they
// belong to a reasoning turn inside the zone). The start of the zone moves
// earlier if needed so a tool exchange or a reasoning run stays whole. As
// messages arrive, the zone moves with the end of the conversation.
func ComputeProtectedRefs(msgs []CoreMessage, state CompressionState, cfg Config) map[string]bool {
	refOf := func(i int) string {
		if isSynthetic(msgs[i]) {
			return ""
		}
		r, _ := RefForRaw(state.MessageRefs, msgs[i].ID)
		return r
	}
	lo, hi := firstUserSpan(msgs)
	out, _ := softZone(msgs, cfg, zoneFacts{
		lastUser:      lastUserText(msgs),
		first:         [2]int{lo, hi},
		ref:           refOf,
		snap:          func(i int) int { return snapshotTokens(state, msgs[i]) },
		synthetic:     func(i int) bool { return isSynthetic(msgs[i]) },
		neverPreserve: func(i int) bool { return IsNeverPreserveRecentTool(msgs[i]) },
	})
	return out
}

// zoneFacts supplies softZone's per-message facts by view index, so the
// Engine can answer from what it cached instead of recomputing them.
type zoneFacts struct {
	// lastUser: index of the latest user text message, -1 if none.
	lastUser int
	// first: the first user message, [lo, hi) (firstUserSpan); lo < 0
	// when there is none.
	first         [2]int
	ref           func(i int) string // "" for synthetic or unaddressable messages
	snap          func(i int) int    // snapshotTokens
	synthetic     func(i int) bool
	neverPreserve func(i int) bool
}

// firstUserSpan locates the conversation's first user message, the task,
// in msgs: the run [lo, hi) of user text messages that starts at the first
// one (a host splits a message into one CoreMessage per part, so a task
// sent as several text parts stays whole). lo is -1 when there is none.
//
// The spec protects only the recent zone and the latest user message; the
// task is protected too, so it stays in view verbatim however long the
// session grows (issue 27).
func firstUserSpan(msgs []CoreMessage) (lo, hi int) {
	for i, m := range msgs {
		if isUserText(m) {
			hi = i + 1
			for hi < len(msgs) && isUserText(msgs[hi]) {
				hi++
			}
			return i, hi
		}
	}
	return -1, -1
}

// lastUserText is the index of the latest user text message in msgs, or -1.
func lastUserText(msgs []CoreMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if isUserText(msgs[i]) {
			return i
		}
	}
	return -1
}

func isUserText(m CoreMessage) bool {
	return m.Role == RoleUser && m.ContentType == CTText && !isSynthetic(m)
}

// softZone is ComputeProtectedRefs given its facts. It also returns where the
// recent zone starts (len(msgs) when there is none): nothing before that
// index is protected except the latest user message.
func softZone(msgs []CoreMessage, cfg Config, f zoneFacts) (map[string]bool, int) {
	out := map[string]bool{}
	start := len(msgs)
	slots, tokens := 0, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if slots >= cfg.PreserveRecentMessages && tokens >= cfg.PreserveRecentTokens {
			break
		}
		if f.synthetic(i) {
			continue
		}
		start = i
		// A never-preserve exchange (a Bash call, a Read) takes no slot, but
		// its tokens count: the zone is the conversation's tail. Counting
		// neither let an agent whose every call is one such tool (a shell:
		// mini-swe-agent, OpenHands) spread the zone over the whole history,
		// one soft-protected text per step, so every range noa could offer
		// was a single step (issue 27).
		tokens += f.snap(i)
		if f.neverPreserve(i) {
			continue
		}
		slots++
	}
	if start < len(msgs) {
		start, _ = ApplyPairBoundaryAdjustments(start, len(msgs)-1, msgs)
		// A never-preserve exchange that belongs to a reasoning turn stays
		// with it: freeing it alone would offer a range that can only be
		// withdrawn again (its reasoning run must not lose its act).
		tied := map[int]bool{}
		var groups []TurnGroup
		if hasReasoning(msgs[start:]) {
			groups = ComputeTurnGroups(msgs[start:])
		}
		for _, g := range groups {
			if len(g.ReasoningIdx) == 0 {
				continue
			}
			for _, s := range [][]int{g.ActIdx, g.ResultIdx} {
				for _, i := range s {
					tied[start+i] = true
				}
			}
		}
		for i := start; i < len(msgs); i++ {
			if f.neverPreserve(i) && !tied[i] {
				continue
			}
			if r := f.ref(i); r != "" {
				out[r] = true
			}
		}
	}
	if f.lastUser >= 0 {
		if r := f.ref(f.lastUser); r != "" {
			out[r] = true
		}
	}
	for i := max(f.first[0], 0); i < f.first[1]; i++ {
		if r := f.ref(i); r != "" {
			out[r] = true
		}
	}
	return out, start
}

// snapshotTokens is a message's frozen size when known, else an estimate.
func snapshotTokens(state CompressionState, m CoreMessage) int {
	if r, ok := RefForRaw(state.MessageRefs, m.ID); ok {
		if n, ok := state.TokenSnapshot[r]; ok {
			return n
		}
	}
	return CountMessageTokens(m, nil)
}
