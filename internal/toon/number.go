package toon

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// number is a normalized numeric value: its canonical TOON/JSON literal.
type number string

// isNumberLiteral reports whether s matches the JSON number grammar
// (RFC 8259 §6), which is also the set of unquoted tokens TOON decoders read
// as numbers (spec §4: no leading zeros, optional fraction and exponent).
func isNumberLiteral(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// canonicalNumber rewrites a JSON number literal into the canonical form of
// spec §2 without losing any digit. The layout follows the algorithm
// ECMAScript uses to print numbers (Number::toString), applied to the exact
// decimal digits instead of to a float64: plain decimal notation when
// 1e-6 <= |n| < 1e21, otherwise one leading digit, the rest as a fraction and
// an explicitly signed exponent (1e+21, 1.25e-7). For a literal holding the
// shortest round-trip digits of a float64 the result is byte-identical to
// what JavaScript, and so the reference TOON encoder, prints.
func canonicalNumber(lit string) (string, error) {
	if !isNumberLiteral(lit) {
		return "", fmt.Errorf("toon: %q is not a JSON number", lit)
	}
	neg := lit[0] == '-'
	s := strings.TrimPrefix(lit, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, fracPart, _ := strings.Cut(mant, ".")
	exp := int64(0)
	if hasExp {
		e, err := strconv.ParseInt(strings.TrimPrefix(expPart, "+"), 10, 64)
		if err != nil || e > math.MaxInt32 || e < math.MinInt32 {
			return "", fmt.Errorf("toon: exponent of %q is out of range", lit)
		}
		exp = e
	}
	digits := intPart + fracPart
	// The decimal point sits after `point` digits of `digits`.
	point := int64(len(intPart)) + exp
	trimmed := strings.TrimLeft(digits, "0")
	point -= int64(len(digits) - len(trimmed))
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return "0", nil // covers -0 as well (spec §2)
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	k := int64(len(digits))
	switch {
	case k <= point && point <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", int(point-k)))
	case 0 < point && point <= 21:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	case -6 < point && point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", int(-point)))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if point-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(point-1, 10))
	}
	return b.String(), nil
}

// floatNumber normalizes a float: non-finite values become null (spec §3),
// finite ones their shortest round-trip digits in canonical layout. bits is
// 32 for a float32, so it prints as the float32 it is (0.1, not 0.100000001).
func floatNumber(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	s, err := canonicalNumber(strconv.FormatFloat(f, 'e', -1, bits))
	if err != nil {
		// FormatFloat always yields a valid literal for a finite value.
		panic("toon: unexpected float format: " + err.Error())
	}
	return number(s)
}
