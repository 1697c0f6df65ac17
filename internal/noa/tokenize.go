package noa

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// DefaultCountTokens is a rough estimate with no tokenizer: each CJK rune is
// a token, and other runes count a quarter each, rounded up. We count runes
// rather than UTF-16 units (a choice the spec makes on purpose), so an emoji
// weighs the same as a letter.
func DefaultCountTokens(text string) int {
	cjk, other := 0, 0
	for i := 0; i < len(text); {
		if c := text[i]; c < utf8.RuneSelf {
			other++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if isCJK(r) {
			cjk++
		} else {
			other++
		}
	}
	return cjk + (other+3)/4
}

// EstimateTokensFast is a rough count that skips the CJK scan: one token per
// four runes, rounded up.
func EstimateTokensFast(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// CountMessageTokens sizes m as its text plus its tool name, using count
// (DefaultCountTokens when nil).
func CountMessageTokens(m CoreMessage, count TokenCountFn) int {
	if count == nil {
		count = DefaultCountTokens
	}
	n := count(m.Text)
	if m.ToolName != "" {
		n += count(m.ToolName)
	}
	return n
}

func countFn(c TokenCountFn) TokenCountFn {
	if c == nil {
		return DefaultCountTokens
	}
	return c
}

// FormatTokens shortens a token count for display: plain under 1000, "2.5K"
// style under 10000, "42K" style from there up.
func FormatTokens(n int) string {
	neg := ""
	if n < 0 {
		neg, n = "-", -n
	}
	switch {
	case n < 1000:
		return neg + strconv.Itoa(n)
	case n < 10000:
		tenths := (n + 50) / 100
		if tenths >= 100 {
			return neg + "10K"
		}
		return neg + strconv.Itoa(tenths/10) + "." + strconv.Itoa(tenths%10) + "K"
	default:
		return neg + strconv.Itoa((n+500)/1000) + "K"
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
