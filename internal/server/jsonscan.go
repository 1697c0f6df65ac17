package server

import "bytes"

// A JSON walker that finds where the members of an object are without
// decoding them, for looking at a large request body (issue 13: a 5 MB
// tools/call was decoded six times before it reached a tool). Strings are
// skipped with bytes.IndexByte, so a payload costs a fraction of a decode.
// It does not validate: a caller either hands what it found to
// encoding/json (which does), or uses it only where a well-formed body
// would give the same answer and falls back to encoding/json otherwise.

// objectMembers calls fn with each member of the JSON object data[i:]:
// its key as written (between the quotes) and the span of its value. It
// returns false when data[i:] is not an object it can walk (including a key
// with an escape in it, whose name it cannot compare without decoding), or
// when fn returns false.
func objectMembers(data []byte, fn func(key []byte, start, end int) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		ke := stringEnd(data, i)
		if ke < 0 {
			return false
		}
		key := data[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		ve := valueEnd(data, i)
		if ve < 0 || !fn(key, i, ve) {
			return false
		}
		i = skipSpace(data, ve)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd is the index after the closing quote of the string whose
// opening quote is data[i]; -1 when it does not end.
func stringEnd(data []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// valueEnd is the index after the JSON value that starts at data[i]; -1
// when it does not end. Brackets are matched by depth only.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				if j = stringEnd(data, j); j < 0 {
					return -1
				}
				j-- // the loop steps past the quote
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}
