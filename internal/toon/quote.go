package toon

import (
	"strings"
	"unicode/utf8"
)

// isSpace reports whether r is whitespace in the sense used for "leading or
// trailing whitespace" (spec §7.2) and for trimming tokens when decoding. The
// spec leaves the set open; we use ECMAScript's WhiteSpace and LineTerminator
// set (what String.prototype.trim removes) so our quoting decisions match the
// reference implementation byte for byte, and use the same set on both sides
// so every string survives a round trip.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// trim removes leading and trailing isSpace runes.
func trim(s string) string { return strings.TrimFunc(s, isSpace) }

// isNumericLike reports whether a string would read as a number, or is a
// digit run with a leading zero, and so must be quoted (spec §7.2).
// Equivalent to /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i with ASCII digits.
func isNumericLike(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i > start
	}
	if !digits() {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// needsQuotes reports whether a string value must be quoted (spec §7.2) when
// delim is the delimiter that governs its position (spec §11.1).
func needsQuotes(s string, delim byte) bool {
	if s == "" || s == "true" || s == "false" || s == "null" || s[0] == '-' {
		return true
	}
	if r, _ := utf8.DecodeRuneInString(s); isSpace(r) {
		return true
	}
	if r, _ := utf8.DecodeLastRuneInString(s); isSpace(r) {
		return true
	}
	if isNumericLike(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ':', '"', '\\', '[', ']', '{', '}', delim:
			return true
		default:
			if c < 0x20 {
				return true
			}
		}
	}
	return false
}

// isUnquotedKey reports whether a key may appear bare (spec §7.3):
// /^[A-Za-z_][A-Za-z0-9_.]*$/.
func isUnquotedKey(k string) bool {
	if k == "" || !(isLetter(k[0]) || k[0] == '_') {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !(isLetter(c) || isDigit(c) || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// isIdentifierSegment reports whether a key segment may take part in key
// folding or path expansion (spec §1.9): /^[A-Za-z_][A-Za-z0-9_]*$/.
func isIdentifierSegment(k string) bool {
	return isUnquotedKey(k) && !strings.Contains(k, ".")
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

const hexDigits = "0123456789abcdef"

// writeQuoted writes s as a quoted TOON string, escaping exactly the set of
// spec §7.1: backslash, quote, \n, \r, \t, other C0 controls as \u00xx, and
// nothing else (all other text stays literal UTF-8).
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xF])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// writeString writes a string value, quoted only when needsQuotes says so.
func writeString(b *strings.Builder, s string, delim byte) {
	if needsQuotes(s, delim) {
		writeQuoted(b, s)
		return
	}
	b.WriteString(s)
}

// writeKey writes an object key or field name (spec §7.3).
func writeKey(b *strings.Builder, k string) {
	if isUnquotedKey(k) {
		b.WriteString(k)
		return
	}
	writeQuoted(b, k)
}
