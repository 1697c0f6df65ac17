package toon

import (
	"strconv"
	"strings"
)

// Encode renders v as a TOON document. v is first mapped onto the JSON data
// model (spec §3):
//
//   - nil, bool, string: as is (invalid UTF-8 becomes U+FFFD, as in encoding/json)
//   - json.Number: its exact literal in canonical form; an invalid literal is an error
//   - every int and uint type: exact decimal
//   - float32, float64: shortest round-trip digits; NaN and ±Inf become null
//   - []any: array; Object: object in field order (a repeated key is an error)
//   - map[string]any: object with keys sorted, so output is deterministic
//   - json.RawMessage: parsed like EncodeJSON input
//   - anything else (structs, other slices and maps, pointers, time.Time,
//     json.Marshaler implementations): whatever encoding/json produces for
//     it, read back with key order and number literals preserved
//
// The output uses LF line endings and has no trailing newline; an empty root
// object yields "". v is never modified.
func Encode(v any, opts Options) (string, error) {
	cfg, err := opts.config()
	if err != nil {
		return "", err
	}
	n, err := normalize(v, 0)
	if err != nil {
		return "", err
	}
	return encodeNormalized(n, cfg), nil
}

// EncodeJSON renders one JSON value as a TOON document, keeping object member
// order and the exact digits of every number (in canonical layout). Invalid
// JSON, or more than one top-level value, is an error.
func EncodeJSON(raw []byte, opts Options) (string, error) {
	cfg, err := opts.config()
	if err != nil {
		return "", err
	}
	n, err := parseJSON(raw)
	if err != nil {
		return "", err
	}
	return encodeNormalized(n, cfg), nil
}

// encoder writes a normalized value line by line.
type encoder struct {
	cfg   encodeConfig
	b     strings.Builder
	lines int
	// rootDotted holds the root object's keys that contain a dot; a fold must
	// not produce one of them as its full path, or a decoder expanding paths
	// could not tell them apart (spec §13.4, collision avoidance).
	rootDotted map[string]bool
}

func encodeNormalized(v any, cfg encodeConfig) string {
	e := &encoder{cfg: cfg}
	switch x := v.(type) {
	case []any:
		e.array("", false, x, 0)
	case Object:
		for _, f := range x {
			if strings.Contains(f.Key, ".") {
				if e.rootDotted == nil {
					e.rootDotted = make(map[string]bool)
				}
				e.rootDotted[f.Key] = true
			}
		}
		e.object(x, 0, "", cfg.flatten)
	default:
		e.line(0)
		e.primitive(x)
	}
	return e.b.String()
}

// line starts a new line at the given depth.
func (e *encoder) line(depth int) {
	if e.lines > 0 {
		e.b.WriteByte('\n')
	}
	e.lines++
	for range depth * e.cfg.indent {
		e.b.WriteByte(' ')
	}
}

// item starts a new list-item line ("- ") at the given depth.
func (e *encoder) item(depth int) {
	e.line(depth)
	e.b.WriteString("- ")
}

// primitive writes a scalar; strings are quoted against the document
// delimiter, which is also the only active delimiter our headers declare.
func (e *encoder) primitive(v any) {
	switch x := v.(type) {
	case nil:
		e.b.WriteString("null")
	case bool:
		e.b.WriteString(strconv.FormatBool(x))
	case number:
		e.b.WriteString(string(x))
	case string:
		writeString(&e.b, x, e.cfg.delim)
	}
}

func isPrimitive(v any) bool {
	switch v.(type) {
	case []any, Object:
		return false
	}
	return true
}

func allPrimitive(a []any) bool {
	for _, v := range a {
		if !isPrimitive(v) {
			return false
		}
	}
	return true
}

// header writes "key[N<delim?>]{fields}:" (spec §6); key is omitted when
// hasKey is false, the field list when fields is nil.
func (e *encoder) header(key string, hasKey bool, n int, fields []string) {
	if hasKey {
		writeKey(&e.b, key)
	}
	e.b.WriteByte('[')
	e.b.WriteString(strconv.Itoa(n))
	if e.cfg.delim != ',' {
		e.b.WriteByte(e.cfg.delim)
	}
	e.b.WriteByte(']')
	if fields != nil {
		e.b.WriteByte('{')
		for i, f := range fields {
			if i > 0 {
				e.b.WriteByte(e.cfg.delim)
			}
			writeKey(&e.b, f)
		}
		e.b.WriteByte('}')
	}
	e.b.WriteByte(':')
}

// inline writes a primitive array on the current line: header, then values.
func (e *encoder) inline(key string, hasKey bool, a []any) {
	e.header(key, hasKey, len(a), nil)
	for i, v := range a {
		if i == 0 {
			e.b.WriteByte(' ')
		} else {
			e.b.WriteByte(e.cfg.delim)
		}
		e.primitive(v)
	}
}

// object writes the fields of a (non-root-primitive) object at depth. prefix
// is the dotted path of the object from the root, used for fold collision
// checks; flatten is the fold budget left for chains starting here.
func (e *encoder) object(o Object, depth int, prefix string, flatten int) {
	for _, f := range o {
		e.field(o, f.Key, f.Value, depth, prefix, flatten)
	}
}

// field writes one key/value pair of parent at depth.
func (e *encoder) field(parent Object, key string, v any, depth int, prefix string, flatten int) {
	if e.cfg.fold && e.fold(parent, key, v, depth, prefix, flatten) {
		return
	}
	switch x := v.(type) {
	case []any:
		e.array(key, true, x, depth)
	case Object:
		e.line(depth)
		writeKey(&e.b, key)
		e.b.WriteByte(':')
		e.object(x, depth+1, joinPath(prefix, key), flatten)
	default:
		e.line(depth)
		writeKey(&e.b, key)
		e.b.WriteString(": ")
		e.primitive(x)
	}
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// fold writes key/v as a folded dotted key when spec §13.4 allows it and
// reports whether it did. A chain runs through objects with exactly one
// field, at most flatten segments long; every segment must be an identifier,
// and the folded key must not collide with a sibling key or with a dotted
// key at the root.
func (e *encoder) fold(parent Object, key string, v any, depth int, prefix string, flatten int) bool {
	cur, ok := v.(Object)
	if !ok {
		return false
	}
	segs := []string{key}
	var leaf any = cur
	for len(segs) < flatten {
		o, ok := leaf.(Object)
		if !ok || len(o) != 1 {
			break
		}
		segs = append(segs, o[0].Key)
		leaf = o[0].Value
	}
	if len(segs) < 2 {
		return false
	}
	for _, s := range segs {
		if !isIdentifierSegment(s) {
			return false
		}
	}
	folded := strings.Join(segs, ".")
	for _, f := range parent {
		if f.Key == folded {
			return false
		}
	}
	if e.rootDotted[joinPath(prefix, folded)] {
		return false
	}
	switch x := leaf.(type) {
	case []any:
		e.array(folded, true, x, depth)
	case Object:
		e.line(depth)
		e.b.WriteString(folded)
		e.b.WriteByte(':')
		// The rest of the chain (if the budget ran out) or the multi-key
		// object that ended it continues as ordinary nesting, with whatever
		// fold budget is left.
		rest := flatten
		if rest != maxFlatten {
			rest -= len(segs)
		}
		e.object(x, depth+1, joinPath(prefix, folded), rest)
	default:
		e.line(depth)
		e.b.WriteString(folded)
		e.b.WriteString(": ")
		e.primitive(x)
	}
	return true
}

// array writes an array value at depth, choosing the form of spec §9:
// "key: []" when empty, inline for primitives, a list of inline arrays for
// arrays of primitive arrays, a table for uniform primitive-valued objects,
// and a list of items otherwise.
func (e *encoder) array(key string, hasKey bool, a []any, depth int) {
	e.line(depth)
	if len(a) == 0 {
		if hasKey {
			writeKey(&e.b, key)
			e.b.WriteString(": []")
		} else {
			e.b.WriteString("[]")
		}
		return
	}
	if allPrimitive(a) {
		e.inline(key, hasKey, a)
		return
	}
	if fields := tableFields(a); fields != nil {
		e.header(key, hasKey, len(a), fields)
		e.rows(a, fields, depth+1)
		return
	}
	e.header(key, hasKey, len(a), nil)
	for _, v := range a {
		e.listItem(v, depth+1)
	}
}

// tableFields returns the field list when a qualifies for tabular form
// (spec §9.3): every element an object with the same non-empty key set and
// only primitive values. Columns follow the first object's key order.
func tableFields(a []any) []string {
	first, ok := a[0].(Object)
	if !ok || len(first) == 0 {
		return nil
	}
	for _, v := range a {
		o, ok := v.(Object)
		if !ok || len(o) != len(first) {
			return nil
		}
		for _, f := range first {
			fv, ok := o.Lookup(f.Key)
			if !ok || !isPrimitive(fv) {
				return nil
			}
		}
	}
	return first.Keys()
}

// rows writes the tabular rows of a at depth.
func (e *encoder) rows(a []any, fields []string, depth int) {
	for _, v := range a {
		o := v.(Object)
		e.line(depth)
		for i, f := range fields {
			if i > 0 {
				e.b.WriteByte(e.cfg.delim)
			}
			fv, _ := o.Lookup(f)
			e.primitive(fv)
		}
	}
}

// listItem writes one element of an expanded list at depth (spec §9.4, §10).
func (e *encoder) listItem(v any, depth int) {
	switch x := v.(type) {
	case []any:
		e.item(depth)
		if allPrimitive(x) {
			e.inline("", false, x)
			return
		}
		// Nested non-primitive arrays have no room for a field list, so they
		// are always written as lists, never as tables (spec §9.4).
		e.header("", false, len(x), nil)
		for _, el := range x {
			e.listItem(el, depth+1)
		}
	case Object:
		e.objectItem(x, depth)
	default:
		e.item(depth)
		e.primitive(x)
	}
}

// objectItem writes an object as a list item: its first field on the hyphen
// line, the others one level deeper (spec §10).
func (e *encoder) objectItem(o Object, depth int) {
	if len(o) == 0 {
		e.line(depth)
		e.b.WriteByte('-')
		return
	}
	// Root-level dotted keys are out of scope for folds below an array.
	saved := e.rootDotted
	e.rootDotted = nil
	defer func() { e.rootDotted = saved }()

	first, rest := o[0], o[1:]
	e.item(depth)
	switch x := first.Value.(type) {
	case []any:
		switch {
		case len(x) == 0:
			writeKey(&e.b, first.Key)
			e.b.WriteString(": []")
		case allPrimitive(x):
			e.inline(first.Key, true, x)
		default:
			if fields := tableFields(x); fields != nil {
				// A table as first field: header on the hyphen line, rows
				// two levels deeper, the remaining fields one level deeper.
				e.header(first.Key, true, len(x), fields)
				e.rows(x, fields, depth+2)
				break
			}
			e.header(first.Key, true, len(x), nil)
			for _, el := range x {
				e.listItem(el, depth+2)
			}
		}
	case Object:
		writeKey(&e.b, first.Key)
		e.b.WriteByte(':')
		e.object(x, depth+2, "", e.cfg.flatten)
	default:
		writeKey(&e.b, first.Key)
		e.b.WriteString(": ")
		e.primitive(x)
	}
	// The remaining fields form their own sibling set for fold collisions.
	for _, f := range rest {
		e.field(rest, f.Key, f.Value, depth+1, "", e.cfg.flatten)
	}
}
