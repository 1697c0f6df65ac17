package server

import (
	"bytes"

	"github.com/mcproxy/mcproxy/internal/jsonspan"
)

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
	i := jsonspan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = jsonspan.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return true
	}
	for i < len(data) {
		if data[i] != '"' {
			return false
		}
		ke := jsonspan.StringEnd(data, i)
		if ke < 0 {
			return false
		}
		key := data[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = jsonspan.SkipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = jsonspan.SkipSpace(data, i+1)
		ve := jsonspan.ValueEnd(data, i)
		if ve < 0 || !fn(key, i, ve) {
			return false
		}
		i = jsonspan.SkipSpace(data, ve)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = jsonspan.SkipSpace(data, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
	return false
}
