package noa

import (
	"fmt"
	"strconv"
	"strings"
)

// IndexToRef formats index (counting from 1) as a zero-padded mNNNNN ref.
// Callers never pass an index outside the ref range; if one does, "" comes
// back rather than a ref that could collide.
func IndexToRef(index int) string {
	if index < MinRefIndex || index > MaxRefIndex {
		return ""
	}
	return fmt.Sprintf("m%0*d", RefWidth, index)
}

// RefToIndex reverses IndexToRef. Models retype refs loosely, so blanks
// around it, capitals and short padding are all accepted ("M5" is m00005).
func RefToIndex(ref string) (int, bool) {
	s := strings.TrimSpace(ref)
	if len(s) < 2 || (s[0] != 'm' && s[0] != 'M') {
		return 0, false
	}
	digits := strings.TrimSpace(s[1:])
	if digits == "" || len(digits) > 9 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < MinRefIndex || n > MaxRefIndex {
		return 0, false
	}
	return n, true
}

// canonicalRef normalises a ref ("M5 " -> "m00005"); "" when invalid.
func canonicalRef(ref string) string {
	n, ok := RefToIndex(ref)
	if !ok {
		return ""
	}
	return IndexToRef(n)
}

// RawForRef resolves a ref (in any form RefToIndex accepts) to its host id.
func RawForRef(m MessageRefMap, ref string) (string, bool) {
	c := canonicalRef(ref)
	if c == "" {
		return "", false
	}
	raw, ok := m.ByRef[c]
	return raw, ok
}

// RefForRaw looks up the ref of a host message id; protected messages have
// no ref, so they report false.
func RefForRaw(m MessageRefMap, rawID string) (string, bool) {
	ref, ok := m.ByRaw[rawID]
	if !ok || ref == BlockedRef {
		return "", false
	}
	return ref, true
}

// HighestUsedIndex reports the biggest ref number in use (0 when none).
// Protected messages never consume a number.
func HighestUsedIndex(m MessageRefMap) int {
	hi := 0
	for ref := range m.ByRef {
		if n, ok := RefToIndex(ref); ok && n > hi {
			hi = n
		}
	}
	return hi
}

// AssignRefsOptions configures AssignRefs.
type AssignRefsOptions struct {
	// Existing holds the refs given so far; AssignRefs works on a copy.
	Existing MessageRefMap
	// NextIndex is the first number to try (raised to MinRefIndex if
	// lower); numbers Existing already uses are passed over.
	NextIndex int
	// IsProtected picks messages the model may never name: they are stored
	// as BlockedRef and get no number.
	IsProtected func(CoreMessage) bool
	// ShouldSkip picks messages that are not recorded at all (neither ref
	// nor BlockedRef), such as synthetic ones.
	ShouldSkip func(CoreMessage) bool
}

// AssignRefsResult is what AssignRefs returns.
type AssignRefsResult struct {
	Map           MessageRefMap
	NextIndex     int
	NewlyAssigned int
}

// AssignRefs numbers the messages that have no ref so far.
//
// Messages that already have an entry are left exactly as they are; that is
// what keeps refs stable across pruning and rebuilds, so a ref the model
// wrote down earlier still means the same message. After MaxRefIndex no new
// refs are given; later messages simply cannot be addressed.
func AssignRefs(messages []CoreMessage, opts AssignRefsOptions) AssignRefsResult {
	out := cloneRefMap(opts.Existing)
	next, assigned := assignRefsInto(out, messages, opts.NextIndex, opts.IsProtected, opts.ShouldSkip)
	return AssignRefsResult{Map: out, NextIndex: next, NewlyAssigned: assigned}
}

// assignRefsInto is AssignRefs extending m in place, for callers that
// already own a copy.
func assignRefsInto(out MessageRefMap, messages []CoreMessage, next int, isProtected, shouldSkip func(CoreMessage) bool) (int, int) {
	if next < MinRefIndex {
		next = MinRefIndex
	}
	assigned := 0
	for _, m := range messages {
		if m.ID == "" {
			continue
		}
		if _, seen := out.ByRaw[m.ID]; seen {
			continue
		}
		if shouldSkip != nil && shouldSkip(m) {
			continue
		}
		if isProtected != nil && isProtected(m) {
			out.ByRaw[m.ID] = BlockedRef
			continue
		}
		// Skip numbers already taken, so a stale NextIndex can never make a
		// ref point at a second message.
		for next <= MaxRefIndex {
			if _, taken := out.ByRef[IndexToRef(next)]; !taken {
				break
			}
			next++
		}
		ref := IndexToRef(next)
		if ref == "" {
			continue
		}
		out.ByRaw[m.ID] = ref
		out.ByRef[ref] = m.ID
		next++
		assigned++
	}
	return next, assigned
}

// FormatRefTag renders the tag a host shows next to a message:
// "[m00012 · 1.2K tok]". Pass the frozen TokenSnapshot value so the tag's
// bytes never change between turns.
func FormatRefTag(ref string, tokens int) string {
	return "[" + ref + " · " + FormatTokens(tokens) + " tok]"
}

// SummaryMessageID names the synthetic message that shows a block's summary;
// the prefix lets later passes tell it apart from host messages.
func SummaryMessageID(blockID string) string { return SummaryIDPrefix + blockID }

// BlockIDFromSummaryID is the inverse of SummaryMessageID.
func BlockIDFromSummaryID(s string) (string, bool) {
	if !strings.HasPrefix(s, SummaryIDPrefix) {
		return "", false
	}
	id, ok := ParseBlockID(strings.TrimPrefix(s, SummaryIDPrefix))
	return id, ok
}

// ParseBlockID normalises the spellings models use for a block: "b5",
// "B005", "5", or the displayed form with its tier suffix ("b5(T2)"). The
// result is always "bN".
func ParseBlockID(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(s, '('); i >= 0 {
		label := strings.TrimSpace(s[i:])
		if !strings.HasSuffix(label, ")") || !strings.HasPrefix(label, "(t") {
			return "", false
		}
		if _, err := strconv.Atoi(label[2 : len(label)-1]); err != nil {
			return "", false
		}
		s = strings.TrimSpace(s[:i])
	}
	s = strings.TrimPrefix(s, "b")
	if s == "" || len(s) > 9 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return "", false
	}
	return "b" + strconv.Itoa(n), true
}

// boundaryRef is one parsed endpoint of a requested range.
type boundaryRef struct {
	Kind BoundaryKind
	// Ref is the canonical message ref when Kind is BoundaryMessage.
	Ref string
	// BlockID is the canonical block id when Kind is BoundaryBlock.
	BlockID string
}

// ParseBoundary classifies one endpoint: a leading "m" means a message ref, a
// leading "b" a block id. A bare number is rejected because it could mean
// either.
func ParseBoundary(s string) (boundaryRef, bool) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch {
	case strings.HasPrefix(t, "m"):
		if c := canonicalRef(t); c != "" {
			return boundaryRef{Kind: BoundaryMessage, Ref: c}, true
		}
	case strings.HasPrefix(t, "b"):
		if id, ok := ParseBlockID(t); ok {
			return boundaryRef{Kind: BoundaryBlock, BlockID: id}, true
		}
	}
	return boundaryRef{}, false
}
