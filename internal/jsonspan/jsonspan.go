// Package jsonspan finds where JSON values start and end in a byte slice
// without decoding them: the gateway takes a request of megabytes apart
// into spans of its original bytes, and the MCP front looks at a large
// tools/call body, both in one pass per level instead of a decode per
// level. Strings are skipped with bytes.IndexByte. Deeper bounds nesting
// in one pass, before anything walks a value level by level. Nothing here validates
// JSON fully: callers check structure (separators, brackets) around the
// spans and hand anything doubtful to encoding/json.
package jsonspan

import "bytes"

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// ValueEnd returns the index just past the JSON value starting at b[i]
// (not space), or -1 when there is none or it is cut short. Brackets are
// matched by depth only; a number or literal runs over the characters
// numbers and literals are made of.
func ValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := StringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1 // the loop steps past the quote
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] >= '0' && b[j] <= '9' || b[j] >= 'a' && b[j] <= 'z' || b[j] >= 'A' && b[j] <= 'Z') {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// Spaced reports whether b has JSON white space outside its strings, that
// is, whether compacting b could change it. A string that does not end is
// taken as spaced.
func Spaced(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case ' ', '\n', '\r', '\t':
			return true
		case '"':
			e := StringEnd(b, i)
			if e < 0 {
				return true
			}
			i = e - 1
		}
	}
	return false
}

// StringEnd returns the index just past the string whose opening quote is
// b[i], or -1 when it does not end.
func StringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return -1
}

// Hex4 is the rune the four hex digits at the start of s spell (the XXXX
// of a \uXXXX escape); false when s does not start with four hex digits.
func Hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Unescape decodes the escape sequence at the start of s (s[0] is its
// backslash): the character it stands for and the bytes it takes. A \u
// escape gives its UTF-16 code unit as it is, a surrogate half included:
// joining a pair, replacing a lone half or refusing it is the caller's
// policy. ok is false for anything else JSON does not allow.
func Unescape(s []byte) (r rune, n int, ok bool) {
	if len(s) < 2 || s[0] != '\\' {
		return 0, 0, false
	}
	switch c := s[1]; c {
	case '"', '\\', '/':
		return rune(c), 2, true
	case 'b':
		return '\b', 2, true
	case 'f':
		return '\f', 2, true
	case 'n':
		return '\n', 2, true
	case 'r':
		return '\r', 2, true
	case 't':
		return '\t', 2, true
	case 'u':
		r, ok := Hex4(s[2:])
		return r, 6, ok
	}
	return 0, 0, false
}

// Deeper reports whether the JSON text b nests arrays and objects more
// than limit deep, in one pass over b that stops at the first bracket past
// limit. Brackets inside strings do not count; b need not be well formed
// (an unterminated string ends the scan).
func Deeper(b []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			e := StringEnd(b, i)
			if e < 0 {
				return false
			}
			i = e - 1
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// A JSON walker that finds where the members of an object are without
// decoding them, for looking at a large request body (issue 13: a 5 MB
// tools/call was decoded six times before it reached a tool). Strings are
// skipped with bytes.IndexByte, so a payload costs a fraction of a decode.
// It does not validate: a caller either hands what it found to
// encoding/json (which does), or uses it only where a well-formed body
// would give the same answer and falls back to encoding/json otherwise.

// ObjectMembers calls fn with each member of the JSON object data[i:]:
// its key as written (between the quotes) and the span of its value. It
// returns false when data[i:] is not an object it can walk (including a key
// with an escape in it, whose name it cannot compare without decoding), or
// when fn returns false.
func ObjectMembers(data []byte, fn func(key []byte, start, end int) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		ke := StringEnd(data, i)
		if ke < 0 {
			return false
		}
		key := data[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = SkipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = SkipSpace(data, i+1)
		ve := ValueEnd(data, i)
		if ve < 0 || !fn(key, i, ve) {
			return false
		}
		i = SkipSpace(data, ve)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}
