package noa

import (
	"fmt"
	"strconv"
	"strings"
)

// IndexToRef renders a 1-based index as mNNNNN. Out-of-range input is a
// programming error and yields "".
func IndexToRef(index int) string {
	if index < MinRefIndex || index > MaxRefIndex {
		return ""
	}
	return fmt.Sprintf("m%0*d", RefWidth, index)
}

// RefToIndex parses mNNNNN back to its index, tolerating surrounding space,
// upper case and missing zero padding (m5 == m00005).
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

// RefForRaw returns the ref assigned to a host message id. BLOCKED entries
// are not refs and report false.
func RefForRaw(m MessageRefMap, rawID string) (string, bool) {
	ref, ok := m.ByRaw[rawID]
	if !ok || ref == BlockedRef {
		return "", false
	}
	return ref, true
}

// HighestUsedIndex is the largest ref index handed out so far; BLOCKED
// entries occupy no number.
func HighestUsedIndex(m MessageRefMap) int {
	hi := 0
	for ref := range m.ByRef {
		if n, ok := RefToIndex(ref); ok && n > hi {
			hi = n
		}
	}
	return hi
}

// AssignRefsOptions parameterises a pass over the messages.
type AssignRefsOptions struct {
	// Existing is the map to extend. It is copied, not mutated.
	Existing MessageRefMap
	// NextIndex is where allocation resumes; below MinRefIndex it is clamped.
	// Numbers already present in Existing are skipped, never reused.
	NextIndex int
	// IsProtected marks a message as hard-protected: it is recorded as
	// BLOCKED and never becomes addressable.
	IsProtected func(CoreMessage) bool
	// ShouldSkip leaves a message out of the map entirely.
	ShouldSkip func(CoreMessage) bool
}

// AssignRefsResult carries the extended map.
type AssignRefsResult struct {
	Map           MessageRefMap
	NextIndex     int
	NewlyAssigned int
}

// AssignRefs gives a ref to every message that does not have one yet.
//
// A message already in ByRaw is skipped outright, so no compression, prune or
// rebuild can renumber it: every ref the model has seen stays valid for the
// whole session. Once MaxRefIndex is used up, later messages stay unaddressed.
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

// SummaryMessageID is the synthetic id of a block's rendered summary.
func SummaryMessageID(blockID string) string { return SummaryIDPrefix + blockID }

// BlockIDFromSummaryID is the inverse of SummaryMessageID.
func BlockIDFromSummaryID(s string) (string, bool) {
	if !strings.HasPrefix(s, SummaryIDPrefix) {
		return "", false
	}
	id, ok := ParseBlockID(strings.TrimPrefix(s, SummaryIDPrefix))
	return id, ok
}

// ParseBlockID accepts "b5", "b005", a bare "5", and a trailing tier label as
// displayed ("b5(T2)"), case-insensitively. It returns the canonical "bN".
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
