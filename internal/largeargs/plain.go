package largeargs

import (
	"bytes"
	"strings"
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
// encoding/json, or is not well-formed. It reads data once, whatever the
// nesting (finding each nested object's end before decoding it rescanned it
// once per level above it: quadratic, issue 26), and leaves objects nested
// deeper than maxPlainDepth to encoding/json, which bounds its own.
func plainObject(data []byte) (map[string]any, bool) {
	m, e, ok := plainObjectAt(data, jsonspan.SkipSpace(data, 0), 1)
	if !ok || jsonspan.SkipSpace(data, e) != len(data) {
		return nil, false
	}
	return m, true
}

// maxPlainDepth bounds plainObject's recursion, well inside encoding/json's
// own nesting limit (10000), so that whatever plainObject decodes
// encoding/json would decode too.
const maxPlainDepth = 1000

// plainObjectAt decodes the object starting at data[i], depth deep, and
// returns the index just past it.
func plainObjectAt(data []byte, i, depth int) (map[string]any, int, bool) {
	if depth > maxPlainDepth || i >= len(data) || data[i] != '{' {
		return nil, 0, false
	}
	m := map[string]any{}
	i = jsonspan.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return m, i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, 0, false
		}
		ke := jsonspan.StringEnd(data, i)
		if ke < 0 {
			return nil, 0, false
		}
		key := data[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, 0, false // an escaped key, left to encoding/json
		}
		k, ok := plainString(key)
		if !ok {
			return nil, 0, false
		}
		i = jsonspan.SkipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return nil, 0, false
		}
		i = jsonspan.SkipSpace(data, i+1)
		if i >= len(data) {
			return nil, 0, false
		}
		var v any
		var e int
		switch data[i] {
		case '"':
			if e = jsonspan.StringEnd(data, i); e < 0 {
				return nil, 0, false
			}
			v, ok = plainString(data[i+1 : e-1])
		case '{':
			v, e, ok = plainObjectAt(data, i, depth+1)
		default:
			if e = jsonspan.ValueEnd(data, i); e < 0 {
				return nil, 0, false
			}
			switch string(data[i:e]) {
			case "true":
				v = true
			case "false":
				v = false
			case "null":
				v = nil
			default:
				ok = false
			}
		}
		if !ok {
			return nil, 0, false
		}
		m[k] = v
		i = jsonspan.SkipSpace(data, e)
		switch {
		case i >= len(data):
			return nil, 0, false
		case data[i] == ',':
			i = jsonspan.SkipSpace(data, i+1)
		case data[i] == '}':
			return m, i + 1, true
		default:
			return nil, 0, false
		}
	}
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
	// A Builder hands over what it built without copying it: a 5 MB
	// argument is one allocation, not two (issue 28).
	var out strings.Builder
	out.Grow(len(s))
	for i >= 0 {
		out.Write(s[:i])
		r, n, ok := jsonspan.Unescape(s[i:])
		if !ok || utf16.IsSurrogate(r) {
			return "", false // a pair, or a lone half encoding/json replaces
		}
		out.WriteRune(r)
		s = s[i+n:]
		i = bytes.IndexByte(s, '\\')
	}
	out.Write(s)
	return out.String(), true
}
