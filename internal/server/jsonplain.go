package server

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/jsonspan"
)

// A decoder for the common shape of large tool arguments: objects whose
// values are strings, true, false, null or such objects (write_file's
// {"path": ..., "content": ...}). encoding/json validates a 5 MB body in
// one pass and decodes it in another, about 34 ms here; this walks it once
// with bytes.IndexByte (issue 13). It answers only where it is sure to
// give what encoding/json gives and leaves everything else (numbers,
// arrays, surrogate \u escapes, invalid UTF-8, keys with escapes) to encoding/json.

// plainObject decodes the JSON object data into what json.Unmarshal into
// a map[string]any gives; false when data holds anything it leaves to
// encoding/json, or is not well-formed.
func plainObject(data []byte) (map[string]any, bool) {
	m := map[string]any{}
	last := -1 // end of the last value
	ok := objectMembers(data, func(key []byte, s, e int) bool {
		k, ok := plainString(key)
		if !ok {
			return false
		}
		var v any
		switch raw := data[s:e]; raw[0] {
		case '"':
			if v, ok = plainString(raw[1 : len(raw)-1]); !ok {
				return false
			}
		case '{':
			if v, ok = plainObject(raw); !ok {
				return false
			}
		default:
			switch string(raw) {
			case "true":
				v = true
			case "false":
				v = false
			case "null":
				v = nil
			default:
				return false
			}
		}
		m[k], last = v, e
		return true
	})
	if !ok {
		return nil, false
	}
	// objectMembers stops at the first '}' after a member; it must close
	// data, as jsonspan.ValueEnd found it.
	end := len(bytes.TrimRight(data, " \t\r\n"))
	if last < 0 {
		last = bytes.IndexByte(data, '{') + 1
	}
	if i := jsonspan.SkipSpace(data, last); i != end-1 || data[i] != '}' {
		return nil, false
	}
	return m, true
}

// plainString decodes the inside of a JSON string that has no control
// character, only valid UTF-8 and no \u escape of a UTF-16 surrogate;
// false otherwise.
func plainString(s []byte) (string, bool) {
	for _, c := range s {
		if c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return string(s), true
	}
	out := make([]byte, 0, len(s))
	for i >= 0 {
		out = append(out, s[:i]...)
		r, n, ok := jsonspan.Unescape(s[i:])
		if !ok || utf16.IsSurrogate(r) {
			return "", false // a pair, or a lone half encoding/json replaces
		}
		out = utf8.AppendRune(out, r)
		s = s[i+n:]
		i = bytes.IndexByte(s, '\\')
	}
	return string(append(out, s...)), true
}
