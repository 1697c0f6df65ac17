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

// wordStart reports whether a count is additive at byte i of s: i is 0 or
// len(s), or s[i] is a space between two ASCII letters. No pre-split
// pattern of either encoding puts a letter and a following space in one
// piece, none looks back, and a run of letters ends at the space or at the
// end of the text alike (nor does tokens.Counter's long-run split, the
// class changing there), so both sides split as they do in the whole. A
// text with too few line starts (JSON with its newlines escaped, one long
// line) is cut at these instead.
func wordStart(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	return s[i] == ' ' && i+1 < len(s) && asciiLetter(s[i-1]) && asciiLetter(s[i+1])
}

func asciiLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// split is a kind of position a count is additive at: line starts (just
// after a newline) or word starts (at a space).
type split struct {
	sep byte // the byte next to every such position
	// after: the position is just after sep (line starts), else at it.
	after bool
	ok    func(s string, i int) bool
}

var (
	lineSplit = split{sep: '\n', after: true, ok: lineStart}
	wordSplit = split{sep: ' ', ok: wordStart}
)

// at is the position that sep at byte j marks.
func (k split) at(j int) int {
	if k.after {
		return j + 1
	}
	return j
}

// pieceEnd is the split position that ends the piece beginning at from:
// the last one at most pieceBytes on, else the first after. -1 when there
// is none before the end (then len(s) ends the text's last piece).
func (k split) pieceEnd(s string, from int) int {
	if len(s)-from <= pieceBytes {
		return len(s)
	}
	for i := from + pieceBytes; i > from; {
		j := strings.LastIndexByte(s[from:i], k.sep)
		if j < 0 {
			break
		}
		if at := k.at(from + j); at > from && k.ok(s, at) {
			return at
		}
		i = from + j
	}
	for i := from + pieceBytes; i < len(s); {
		j := strings.IndexByte(s[i:], k.sep)
		if j < 0 {
			return -1
		}
		if at := k.at(i + j); at > from && k.ok(s, at) {
			return at
		}
		i += j + 1
	}
	return -1
}

// pieceStart is pieceEnd from the back: the split position that begins the
// piece ending at to, the first at least pieceBytes before it, else the
// last before that. -1 when there is none after the start.
func (k split) pieceStart(s string, to int) int {
	if to <= pieceBytes {
		return 0
	}
	for i := to - pieceBytes; i < to; {
		j := strings.IndexByte(s[i:to], k.sep)
		if j < 0 {
			break
		}
		if at := k.at(i + j); at > 0 && at < to && k.ok(s, at) {
			return at
		}
		i += j + 1
	}
	for i := to - pieceBytes; i > 0; {
		j := strings.LastIndexByte(s[:i], k.sep)
		if j < 0 {
			return -1
		}
		if at := k.at(j); at > 0 && at < to && k.ok(s, at) {
			return at
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
//
// It cuts at line starts (lineSplit) or, in a text with too few, at word
// starts (wordSplit). note gives the note for a cut at line starts; at a
// word start it is preceded by a blank line, which a line start's newline
// gives it otherwise.
func (h *Host) piecewiseCut(text string, limit, budget int, note func(from, to int) string) (out string, outTokens, total int, over, ok bool) {
	for _, k := range []split{lineSplit, wordSplit} {
		kNote := note
		if !k.after {
			kNote = func(from, to int) string { return "\n\n" + note(from, to) }
		}
		if out, outTokens, total, over, ok = h.piecewiseCutAt(k, text, limit, budget, kNote); ok {
			return out, outTokens, total, over, ok
		}
	}
	return "", 0, 0, false, false
}

// piecewiseCutAt is piecewiseCut at the positions of kind k.
func (h *Host) piecewiseCutAt(k split, text string, limit, budget int, note func(from, to int) string) (out string, outTokens, total int, over, ok bool) {
	count := h.opts.Count
	// The note's size with the widest offsets it can show.
	room := budget - count(note(len(text), len(text)))
	headRoom := room * 2 / 3

	// The head: whole pieces within headRoom. The piece after it is
	// counted too, and is the start of the middle.
	h0, headTokens, next, nextTokens := 0, 0, 0, 0
	for {
		end := k.pieceEnd(text, h0)
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
		start := k.pieceStart(text, t0)
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
		end := k.pieceEnd(text, at)
		if end < 0 || end > midEnd {
			end = midEnd // a split position: the piece before the tail's
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
