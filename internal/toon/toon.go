// Package toon encodes and decodes TOON (Token-Oriented Object Notation), the
// line-oriented, indentation-based rendering of the JSON data model described by
// the TOON specification v3.3 (github.com/toon-format/spec).
//
// The package owns the whole mapping between Go values and TOON text: host-type
// normalization (documented on Encode), canonical number formatting, quoting,
// tabular detection, key folding on the way out, and strict-mode validation and
// path expansion on the way in. It is pure: no I/O, no logging, no globals that
// change after init, and it never mutates the values it is handed.
//
// Numbers are handled losslessly. A number that arrives as a literal (a
// json.Number, or a number inside the JSON given to EncodeJSON) keeps every
// digit; it is only rewritten into the spec's canonical form (no exponent inside
// 1e-6 <= |n| < 1e21, no leading or trailing zeros, -0 as 0), and outside that
// range it uses the exponent form JavaScript would print (1e+21, 1.5e-7).
// Decode returns numbers as json.Number in the same canonical form, so a number
// survives Encode/Decode with its exact value whatever its size.
package toon

import (
	"errors"
	"fmt"
	"math"
)

// Field is one key/value member of an Object.
type Field struct {
	Key   string
	Value any
}

// Object is a JSON object whose member order is significant. TOON preserves
// key order (spec §2), so Encode emits the fields in slice order and Decode
// returns objects as Object in document order. Keys must be unique.
type Object []Field

// Lookup returns the value of the first field named key.
func (o Object) Lookup(key string) (any, bool) {
	for _, f := range o {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// Keys returns the field names in order.
func (o Object) Keys() []string {
	keys := make([]string, len(o))
	for i, f := range o {
		keys[i] = f.Key
	}
	return keys
}

// Key folding modes (spec §13.4).
const (
	FoldingOff  = "off"
	FoldingSafe = "safe"
)

// Options tunes the encoder. The zero value is the spec's default encoding.
type Options struct {
	// Indent is the number of spaces per nesting level; 0 means 2.
	Indent int
	// Delimiter separates inline array values and tabular cells: ',' (also
	// what 0 means), '\t' or '|'. It is the document delimiter of spec §11.1.
	Delimiter rune
	// KeyFolding is FoldingOff (also what "" means) or FoldingSafe, which
	// collapses chains of single-key objects into dotted keys (a.b.c: 1).
	KeyFolding string
	// FlattenDepth caps how many key segments one fold may join when
	// KeyFolding is FoldingSafe; 0 means no cap. Since a fold needs at least
	// two segments, 1 disables folding altogether (as the spec's 0 does).
	FlattenDepth int
}

// Path expansion modes (spec §13.4).
const (
	ExpandOff  = "off"
	ExpandSafe = "safe"
)

// DecodeOptions tunes the decoder. The zero value is the spec's default:
// strict validation, indentation of 2, no path expansion.
type DecodeOptions struct {
	// Indent is the number of spaces per nesting level; 0 means 2.
	Indent int
	// Lenient turns off strict mode (spec §14): counts, row widths, blank lines
	// inside arrays and indentation are no longer checked, depth is computed
	// as floor(spaces/Indent), tabs mixed into indentation are skipped without
	// counting toward depth, duplicate keys resolve last-write-wins, and lines
	// the structure cannot place are ignored.
	Lenient bool
	// ExpandPaths is ExpandOff (also what "" means) or ExpandSafe, which splits
	// unquoted dotted keys made only of identifier segments into nested
	// objects, the inverse of key folding.
	ExpandPaths string
}

// maxDepth bounds nesting on both sides, so hostile input fails with an error
// instead of exhausting the stack.
const maxDepth = 10000

// errTooDeep is returned when a value or document nests deeper than maxDepth.
var errTooDeep = errors.New("nesting exceeds 10000 levels")

// encodeConfig is Options with its defaults filled in and checked.
type encodeConfig struct {
	indent  int
	delim   byte
	fold    bool
	flatten int // maxFlatten when unlimited
}

// maxFlatten stands for an unlimited fold depth.
const maxFlatten = math.MaxInt

func (o Options) config() (encodeConfig, error) {
	c := encodeConfig{indent: o.Indent, flatten: o.FlattenDepth}
	if c.indent == 0 {
		c.indent = 2
	}
	if c.indent < 0 {
		return c, fmt.Errorf("toon: indent %d is negative", o.Indent)
	}
	switch o.Delimiter {
	case 0, ',':
		c.delim = ','
	case '\t':
		c.delim = '\t'
	case '|':
		c.delim = '|'
	default:
		return c, fmt.Errorf("toon: delimiter %q is not one of ',', '\\t', '|'", o.Delimiter)
	}
	switch o.KeyFolding {
	case "", FoldingOff:
	case FoldingSafe:
		c.fold = true
	default:
		return c, fmt.Errorf("toon: key folding %q is not %q or %q", o.KeyFolding, FoldingOff, FoldingSafe)
	}
	if c.flatten < 0 {
		return c, fmt.Errorf("toon: flatten depth %d is negative", o.FlattenDepth)
	}
	if c.flatten == 0 {
		c.flatten = maxFlatten
	}
	return c, nil
}

type decodeConfig struct {
	indent int
	strict bool
	expand bool
}

func (o DecodeOptions) config() (decodeConfig, error) {
	c := decodeConfig{indent: o.Indent, strict: !o.Lenient}
	if c.indent == 0 {
		c.indent = 2
	}
	if c.indent < 0 {
		return c, fmt.Errorf("toon: indent %d is negative", o.Indent)
	}
	switch o.ExpandPaths {
	case "", ExpandOff:
	case ExpandSafe:
		c.expand = true
	default:
		return c, fmt.Errorf("toon: path expansion %q is not %q or %q", o.ExpandPaths, ExpandOff, ExpandSafe)
	}
	return c, nil
}
