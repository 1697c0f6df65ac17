package session

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Cutting from one count (issue 13). When Options.CountSplitsAtLines says
// the count is additive at line starts, an oversize text is counted in
// pieces that end at such starts: from the front until it is clearly over
// the limit, then from the back for the tail. The head and the tail are
// whole pieces, the cut note is joined at line starts too, so the cut
// text's count is the sum of its parts' counts: every byte kept is
// tokenized once, and the middle not at all.

// pieceBytes is the size the pieces aim at: small enough that the head and
// the tail come within a few hundred tokens of their budgets.
const pieceBytes = 4 << 10

// lineStart reports whether a count is additive at byte i of s: i is 0 or
// len(s), or s[i-1] is a newline and s[i] starts neither white space nor
// '/'. The tokenizers' pre-split (cl100k_base, o200k_base) never joins a
// newline to a following character other than white space or, in
// o200k_base, '/', and tokens.Counter's long-run split never crosses a
// change of character class, so no token spans such a position.
func lineStart(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	if s[i-1] != '\n' {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r != '/' && !unicode.IsSpace(r)
}

// pieceEnd is the line start that ends the piece beginning at from: the
// last one at most pieceBytes on, else the first after. -1 when there is
// none before the end (then len(s) ends the text's last piece).
func pieceEnd(s string, from int) int {
	if len(s)-from <= pieceBytes {
		return len(s)
	}
	for i := from + pieceBytes; i > from; {
		j := strings.LastIndexByte(s[from:i], '\n')
		if j < 0 {
			break
		}
		if at := from + j + 1; lineStart(s, at) {
			return at
		}
		i = from + j
	}
	for i := from + pieceBytes; i < len(s); {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			return -1
		}
		if at := i + j + 1; lineStart(s, at) {
			return at
		}
		i += j + 1
	}
	return -1
}

// pieceStart is pieceEnd from the back: the line start that begins the
// piece ending at to, the first at least pieceBytes before it, else the
// last before that. -1 when there is none after the start.
func pieceStart(s string, to int) int {
	if to <= pieceBytes {
		return 0
	}
	for i := to - pieceBytes; i < to; {
		j := strings.IndexByte(s[i:to], '\n')
		if j < 0 {
			break
		}
		if at := i + j + 1; at < to && lineStart(s, at) {
			return at
		}
		i += j + 1
	}
	for i := to - pieceBytes; i > 0; {
		j := strings.LastIndexByte(s[:i], '\n')
		if j < 0 {
			return -1
		}
		if lineStart(s, j+1) {
			return j + 1
		}
		i = j
	}
	return -1
}

// piecewiseCut cuts text, more than limit bytes long, to at most budget
// tokens from pieces counted once (see above): the head from the front, the
// tail from the back, then of the middle only as much as shows the text is
// over limit (with the head and the tail). It returns the cut text and its
// exact count, and the text's size in tokens (exact when it fits, else
// estimated past what was counted); over is false when the text fits (its
// count is then total). ok is false when the text has too few line starts
// to cut this way; the caller then cuts by bytes.
func (h *Host) piecewiseCut(text string, limit, budget int, note func(from, to int) string) (out string, outTokens, total int, over, ok bool) {
	count := h.opts.Count
	// The note's size with the widest offsets it can show.
	room := budget - count(note(len(text), len(text)))
	headRoom := room * 2 / 3

	// The head: whole pieces within headRoom. The piece after it is
	// counted too, and is the start of the middle.
	h0, headTokens, next, nextTokens := 0, 0, 0, 0
	for {
		end := pieceEnd(text, h0)
		if end < 0 {
			return "", 0, 0, false, false
		}
		n := count(text[h0:end])
		if headTokens+n > headRoom {
			next, nextTokens = end, n
			break
		}
		h0, headTokens = end, headTokens+n
		if h0 == len(text) {
			return "", 0, headTokens, false, true // all of it, within the head's room
		}
	}
	// The tail: whole pieces from the back within what the head left. The
	// piece that did not fit is counted too, and ends the middle.
	t0, tailTokens, midEnd, sum := len(text), 0, len(text), headTokens+nextTokens
	for t0 > next {
		start := pieceStart(text, t0)
		if start < next {
			break
		}
		n := count(text[start:t0])
		if headTokens+tailTokens+n > room {
			midEnd, sum = start, sum+n
			break
		}
		t0, tailTokens, midEnd = start, tailTokens+n, start
	}
	sum += tailTokens
	// The middle, only until the whole is shown to be over limit.
	counted := next + len(text) - midEnd
	for at := next; sum <= limit && at < midEnd; {
		end := pieceEnd(text, at)
		if end < 0 || end > midEnd {
			end = midEnd // a line start: the piece before the tail's
		}
		sum += count(text[at:end])
		counted += end - at
		at = end
	}
	if sum <= limit {
		return "", 0, sum, false, true // every piece counted: it fits
	}
	total = int(int64(sum) * int64(len(text)) / int64(max(counted, 1)))
	if h0 == 0 || t0 == len(text) {
		// A head or a tail of no whole piece says little; cut by bytes.
		return "", 0, 0, false, false
	}
	nt := note(h0, t0)
	return text[:h0] + nt + text[t0:], headTokens + count(nt) + tailTokens, total, true, true
}
