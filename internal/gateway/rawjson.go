package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/jsonspan"
)

// The gateway reads every request whole, and a long conversation is
// megabytes of JSON, most of it tool results it only passes on. The
// standard decoder scans a value again at every level it is unpacked
// (validation, then decoding, for the body, the messages array, each
// message, its content, each block), and re-encoding a json.RawMessage
// compacts it once more. The helpers here take JSON apart into spans of
// the original bytes in one pass per level, and put it together without
// rescanning. They check structure (brackets, strings, separators) and
// report malformed input as not ok; what they pass on verbatim (numbers,
// literals, escapes inside strings) the provider judges.

// member is one key and value of an object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// splitArray returns the elements of a JSON array as spans of b.
func splitArray(b []byte) ([]json.RawMessage, bool) {
	i := jsonspan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	i = jsonspan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, jsonspan.SkipSpace(b, i+1) == len(b)
	}
	for {
		e := jsonspan.ValueEnd(b, i)
		if e < 0 {
			return nil, false
		}
		out = append(out, b[i:e:e])
		next, closed, ok := afterValue(b, e, ']')
		switch {
		case !ok:
			return nil, false
		case closed:
			return out, true
		}
		i = next
	}
}

// afterValue reads what follows a value ending at e in an array or object
// that end closes: a comma (next is the following value's index) or the
// closing bracket with nothing after it (closed). ok is false otherwise.
func afterValue(b []byte, e int, end byte) (next int, closed, ok bool) {
	i := jsonspan.SkipSpace(b, e)
	switch {
	case i >= len(b):
		return 0, false, false
	case b[i] == ',':
		return jsonspan.SkipSpace(b, i+1), false, true
	case b[i] == end:
		return 0, true, jsonspan.SkipSpace(b, i+1) == len(b)
	}
	return 0, false, false
}

// splitObject returns the members of a JSON object as spans of b, in
// order.
func splitObject(b []byte) ([]member, bool) {
	i := jsonspan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	var out []member
	i = jsonspan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, jsonspan.SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		e := jsonspan.StringEnd(b, i)
		if e < 0 {
			return nil, false
		}
		key, ok := decodeString(b[i:e])
		if !ok {
			return nil, false
		}
		i = jsonspan.SkipSpace(b, e)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = jsonspan.SkipSpace(b, i+1)
		e = jsonspan.ValueEnd(b, i)
		if e < 0 {
			return nil, false
		}
		out = append(out, member{key: key, val: b[i:e:e]})
		next, closed, ok := afterValue(b, e, '}')
		switch {
		case !ok:
			return nil, false
		case closed:
			return out, true
		}
		i = next
	}
}

// fields is an object's members by key (the last of a repeated key wins,
// as with encoding/json) and its keys in first-seen order.
type fields struct {
	vals map[string]json.RawMessage
	keys []string
}

// objectFields takes an object apart; ok is false when b is not one.
func objectFields(b []byte) (fields, bool) {
	ms, ok := splitObject(b)
	if !ok {
		return fields{}, false
	}
	f := fields{vals: make(map[string]json.RawMessage, len(ms)), keys: make([]string, 0, len(ms))}
	for _, m := range ms {
		if _, dup := f.vals[m.key]; !dup {
			f.keys = append(f.keys, m.key)
		}
		f.vals[m.key] = m.val
	}
	return f, true
}

// str is the string value of key ("" when absent or not a string).
func (f fields) str(key string) string {
	s, _ := decodeString(f.vals[key])
	return s
}

// encode writes the object back: keys in their order, values verbatim.
func (f fields) encode() json.RawMessage { return encodeTop(f.vals, f.keys) }

// with returns a copy of f with key set to v (appended when new).
func (f fields) with(key string, v json.RawMessage) fields {
	out := fields{vals: make(map[string]json.RawMessage, len(f.vals)+1), keys: f.keys}
	for k, x := range f.vals {
		out.vals[k] = x
	}
	if _, ok := out.vals[key]; !ok {
		out.keys = append(slices.Clip(f.keys), key)
	}
	out.vals[key] = v
	return out
}

// without returns a copy of f without key.
func (f fields) without(key string) fields {
	if _, ok := f.vals[key]; !ok {
		return f
	}
	out := fields{vals: make(map[string]json.RawMessage, len(f.vals)), keys: make([]string, 0, len(f.keys))}
	for _, k := range f.keys {
		if k != key {
			out.keys = append(out.keys, k)
			out.vals[k] = f.vals[k]
		}
	}
	return out
}

// firstByte is the first non-space byte of b (0 when none): '"' for a
// string, '[' an array, '{' an object.
func firstByte(b []byte) byte {
	if i := jsonspan.SkipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// decodeString decodes a JSON string literal (surrounding space allowed).
// Invalid UTF-8 and lone surrogates become U+FFFD, as with encoding/json.
func decodeString(b []byte) (string, bool) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	s := b[1 : len(b)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		if bytes.IndexByte(s, '"') >= 0 {
			return "", false
		}
		for _, c := range s {
			if c < 0x20 {
				return "", false
			}
		}
		return string(s), true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			r, n, ok := jsonspan.Unescape(s[i:])
			if !ok {
				return "", false
			}
			i += n
			if utf16.IsSurrogate(r) {
				// A pair becomes its character; a lone half the
				// replacement character, as encoding/json does.
				if r2, n2, ok := jsonspan.Unescape(s[i:]); ok && n2 == 6 {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += n2
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return string(out), true
}

// joinArray writes elements, each valid JSON, as an array, without
// rescanning them.
func joinArray(elems []json.RawMessage) json.RawMessage {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, ']')
}

// canonicalize appends the canonical form of the JSON value raw to dst:
// objects' keys sorted and cache_control members dropped at every depth,
// space outside strings removed, strings and numbers as written. ok is
// false when raw is not well formed or nests deeper than
// maxCanonicalDepth.
//
// It takes time linear in len(raw) at any depth: a first pass records
// where every array and object ends, so that taking an object's members
// apart (to sort them) never scans a nested value again; splitting level
// by level rescans each value once per level above it, seconds of CPU for
// a body of 100 KB nested 16k deep (issue 26).
func canonicalize(dst, raw []byte) ([]byte, bool) {
	c := canonicalizer{raw: raw, out: dst}
	ok := c.run()
	return c.out, ok
}

// maxCanonicalDepth bounds canonicalize's recursion, as encoding/json
// bounds its own; requests are refused well before it
// (gateway.limits.max_json_depth).
const maxCanonicalDepth = config.MaxJSONDepthLimit

// canonicalizer is one run of canonicalize.
type canonicalizer struct {
	raw []byte
	out []byte
	// starts and ends are the spans of raw's arrays and objects, in the
	// order they open (so starts is sorted).
	starts, ends []int
	// steps counts the bytes examined, for the test that the work is
	// linear.
	steps int
}

func (c *canonicalizer) run() bool {
	if !c.index() {
		return false
	}
	i := jsonspan.SkipSpace(c.raw, 0)
	e, ok := c.value(i, 0)
	return ok && jsonspan.SkipSpace(c.raw, e) == len(c.raw)
}

// index records the span of every array and object, checking that their
// brackets match, in one pass.
func (c *canonicalizer) index() bool {
	b := c.raw
	c.steps += len(b)
	var open []int // indexes into starts of the containers still open
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			e := jsonspan.StringEnd(b, i)
			if e < 0 {
				return false
			}
			i = e - 1
		case '{', '[':
			if len(open) >= maxCanonicalDepth {
				return false
			}
			open = append(open, len(c.starts))
			c.starts = append(c.starts, i)
			c.ends = append(c.ends, -1)
		case '}', ']':
			n := len(open) - 1
			if n < 0 || b[c.starts[open[n]]] != b[i]-2 { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			c.ends[open[n]] = i + 1
			open = open[:n]
		}
	}
	return len(open) == 0
}

// end is the index just past the value starting at raw[i], -1 when none.
func (c *canonicalizer) end(i int) int {
	if i < len(c.raw) && (c.raw[i] == '{' || c.raw[i] == '[') {
		c.steps++
		if k, found := slices.BinarySearch(c.starts, i); found {
			return c.ends[k]
		}
		return -1
	}
	e := jsonspan.ValueEnd(c.raw, i)
	c.steps += max(e-i, 1)
	return e
}

// value writes the canonical form of the value starting at raw[i] (not
// space) and returns the index just past it.
func (c *canonicalizer) value(i, depth int) (int, bool) {
	b := c.raw
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '{':
		return c.object(i, depth+1)
	case '[':
		c.out = append(c.out, '[')
		j := jsonspan.SkipSpace(b, i+1)
		if j < len(b) && b[j] == ']' {
			c.out = append(c.out, ']')
			return j + 1, true
		}
		for {
			e, ok := c.value(j, depth+1)
			if !ok {
				return 0, false
			}
			next, closed, ok := c.after(e, ']')
			if !ok {
				return 0, false
			}
			if closed {
				c.out = append(c.out, ']')
				return next, true
			}
			c.out = append(c.out, ',')
			j = next
		}
	}
	e := c.end(i)
	if e < 0 {
		return 0, false
	}
	c.out = append(c.out, b[i:e]...)
	return e, true
}

// after reads what follows a value ending at e inside a container that
// end closes: the next value's index, or the index past the closing
// bracket (closed).
func (c *canonicalizer) after(e int, end byte) (next int, closed, ok bool) {
	i := jsonspan.SkipSpace(c.raw, e)
	switch {
	case i >= len(c.raw):
		return 0, false, false
	case c.raw[i] == ',':
		return jsonspan.SkipSpace(c.raw, i+1), false, true
	case c.raw[i] == end:
		return i + 1, true, true
	}
	return 0, false, false
}

// object writes the object starting at raw[i], members sorted by key (the
// last of a repeated key wins, as with encoding/json), cache_control left
// out.
func (c *canonicalizer) object(i, depth int) (int, bool) {
	b := c.raw
	type span struct {
		key   string
		start int // the value's
	}
	var ms []span
	j := jsonspan.SkipSpace(b, i+1)
	closed := j < len(b) && b[j] == '}'
	if closed {
		j++
	}
	for !closed {
		if j >= len(b) || b[j] != '"' {
			return 0, false
		}
		ke := jsonspan.StringEnd(b, j)
		if ke < 0 {
			return 0, false
		}
		c.steps += ke - j
		key, ok := decodeString(b[j:ke])
		if !ok {
			return 0, false
		}
		j = jsonspan.SkipSpace(b, ke)
		if j >= len(b) || b[j] != ':' {
			return 0, false
		}
		j = jsonspan.SkipSpace(b, j+1)
		e := c.end(j)
		if e < 0 {
			return 0, false
		}
		if key != "cache_control" {
			ms = append(ms, span{key, j})
		}
		if j, closed, ok = c.after(e, '}'); !ok {
			return 0, false
		}
	}
	slices.SortStableFunc(ms, func(a, b span) int { return strings.Compare(a.key, b.key) })
	c.out = append(c.out, '{')
	for k, first := 0, true; k < len(ms); k, first = k+1, false {
		for k+1 < len(ms) && ms[k+1].key == ms[k].key {
			k++ // the last of a repeated key
		}
		if !first {
			c.out = append(c.out, ',')
		}
		c.out = strconv.AppendQuote(c.out, ms[k].key)
		c.out = append(c.out, ':')
		if _, ok := c.value(ms[k].start, depth); !ok {
			return 0, false
		}
	}
	c.out = append(c.out, '}')
	return j, true
}
