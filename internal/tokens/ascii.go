package tokens

import "math"

// A faster exact count for ASCII text (issue 13). tiktoken-go splits text
// into pieces with a backtracking regular expression before it merges
// byte pairs, and the expression is most of its cost (a 5 MB write_file's
// cut spent about 85% of its counting there). For text that is all ASCII,
// where each encoding's pattern reduces to a few byte classes, the split
// below walks the bytes once and gives the same pieces; each piece is then
// merged with the encoding's ranks as tiktoken merges it. Text with any
// other byte is counted by tiktoken-go. TestASCIISplit and FuzzASCIICount
// hold both steps equal to tiktoken-go's.

// Byte classes, as the patterns' \p{L}, \p{N} and \s see ASCII: \p{Lu}
// and \p{Ll} are the two letter cases, and nothing in ASCII is \p{Lt},
// \p{Lm}, \p{Lo} or \p{M}.
const (
	clOther = iota
	clUpper
	clLower
	clDigit
	clSpace   // white space other than the line ends
	clNewline // \r, \n
)

var asciiClass = func() (t [128]byte) {
	for c := range t {
		switch {
		case 'A' <= c && c <= 'Z':
			t[c] = clUpper
		case 'a' <= c && c <= 'z':
			t[c] = clLower
		case '0' <= c && c <= '9':
			t[c] = clDigit
		case c == '\r' || c == '\n':
			t[c] = clNewline
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			t[c] = clSpace
		}
	}
	return t
}()

// isASCII reports whether every byte of s is below 0x80.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// class is the class of s[i]; past the end it is -1.
func class(s string, i int) int {
	if i >= len(s) {
		return -1
	}
	return int(asciiClass[s[i]])
}

func isLetter(k int) bool { return k == clUpper || k == clLower }

func isWhite(k int) bool { return k == clSpace || k == clNewline }

// contraction is the length of the (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i],
// 0 when there is none.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	lower := func(j int) byte {
		if j < len(s) && 'A' <= s[j] && s[j] <= 'Z' {
			return s[j] + 'a' - 'A'
		}
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return 3
		}
	}
	return 0
}

// run is the end of the run of bytes from i on whose class ok accepts.
func run(s string, i int, ok func(int) bool) int {
	for i < len(s) && ok(class(s, i)) {
		i++
	}
	return i
}

// prefixed reports whether s[i] may be the optional [^\r\n\p{L}\p{N}]
// before a word.
func prefixed(s string, i int) bool {
	k := class(s, i)
	return k == clOther || k == clSpace
}

// whiteEnd is where the last three alternatives of both patterns end a
// piece starting with the white space at s[i]: \s*[\r\n]+ up to the run's
// last line end, else \s+(?!\S) short of the run's last byte when a
// non-space follows, else \s+.
func whiteEnd(s string, i int) int {
	j := run(s, i, isWhite)
	for k := j - 1; k >= i; k-- {
		if class(s, k) == clNewline {
			return k + 1
		}
	}
	if j < len(s) && j-1 > i {
		return j - 1
	}
	return j
}

// punctEnd is the end of ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with extra also
// accepted after the marks: '/' for o200k_base) at s[i], or -1.
func punctEnd(s string, i int, extra byte) int {
	j := i
	if s[j] == ' ' && class(s, j+1) == clOther {
		j++
	}
	if class(s, j) != clOther {
		return -1
	}
	j = run(s, j, func(k int) bool { return k == clOther })
	for j < len(s) && (class(s, j) == clNewline || extra != 0 && s[j] == extra) {
		j++
	}
	return j
}

// splitCL100K calls fn with each piece of ASCII s under cl100k_base's
// pattern: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitCL100K(s string, fn func(piece string)) {
	for i := 0; i < len(s); {
		end := i
		switch k := class(s, i); {
		case contraction(s, i) > 0:
			end = i + contraction(s, i)
		case isLetter(k):
			end = run(s, i, isLetter)
		case prefixed(s, i) && isLetter(class(s, i+1)):
			end = run(s, i+1, isLetter)
		case k == clDigit:
			end = min(run(s, i, func(k int) bool { return k == clDigit }), i+3)
		case punctEnd(s, i, 0) > 0:
			end = punctEnd(s, i, 0)
		default: // white space
			end = whiteEnd(s, i)
		}
		fn(s[i:end])
		i = end
	}
}

// splitO200K calls fn with each piece of ASCII s under o200k_base's
// pattern, which in ASCII reads:
// [^\r\n\p{L}\p{N}]?[A-Z]*[a-z]+C?|[^\r\n\p{L}\p{N}]?[A-Z]+[a-z]*C?|
// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// where C is (?i:'s|'t|'re|'ve|'m|'ll|'d).
func splitO200K(s string, fn func(piece string)) {
	upper := func(k int) bool { return k == clUpper }
	lower := func(k int) bool { return k == clLower }
	for i := 0; i < len(s); {
		end := -1
		start := i
		if prefixed(s, i) && isLetter(class(s, i+1)) {
			start = i + 1
		}
		if isLetter(class(s, start)) {
			// [A-Z]*[a-z]+ when lower case follows the capitals, else
			// [A-Z]+[a-z]* (which then takes no lower case); either way
			// the word is the capitals and the lower case after them.
			end = run(s, run(s, start, upper), lower)
			end += contraction(s, end)
		} else {
			switch k := class(s, i); {
			case k == clDigit:
				end = min(run(s, i, func(k int) bool { return k == clDigit }), i+3)
			case punctEnd(s, i, '/') > 0:
				end = punctEnd(s, i, '/')
			default:
				end = whiteEnd(s, i)
			}
		}
		fn(s[i:end])
		i = end
	}
}

// bpeCount is the number of tokens piece merges into under ranks: the
// byte pairs are merged lowest rank first (the leftmost among equals)
// until no adjacent pair is ranked, as tiktoken merges them.
func bpeCount(ranks map[string]int, piece string) int {
	if len(piece) <= 1 {
		return len(piece)
	}
	if _, ok := ranks[piece]; ok {
		return 1
	}
	// starts[i] is where part i begins; pair[i] the rank of parts i and
	// i+1 joined.
	starts := make([]int, len(piece)+1)
	for i := range starts {
		starts[i] = i
	}
	pairRank := func(i int) int {
		if i+2 < len(starts) {
			if r, ok := ranks[piece[starts[i]:starts[i+2]]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	pair := make([]int, len(piece)-1)
	for i := range pair {
		pair[i] = pairRank(i)
	}
	for len(pair) > 0 {
		best := 0
		for i, r := range pair {
			if r < pair[best] {
				best = i
			}
		}
		if pair[best] == math.MaxInt {
			break
		}
		// Join parts best and best+1.
		starts = append(starts[:best+1], starts[best+2:]...)
		pair = append(pair[:best], pair[best+1:]...)
		if best < len(pair) {
			pair[best] = pairRank(best)
		}
		if best > 0 {
			pair[best-1] = pairRank(best - 1)
		}
	}
	return len(starts) - 1
}
