package session

import (
	"strconv"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// A part of a conversation that is not text (an image, a document, a block
// of a kind the gateway does not read) is recorded as a placeholder naming
// what it is and the tokens the model is billed for it: OpaqueText. Every
// session counts such a placeholder as those tokens, whatever its
// tokenizer (Options.Count is wrapped by CountOpaque), so noa weighs the
// part at what the model pays for it, and a replay (a reopen, `mcproxy
// sessions show`, Rebuild) counts it exactly as the session did.
const (
	opaquePrefix = "[opaque "
	opaqueMid    = ": ~"
	opaqueSuffix = " tokens]"
)

// OpaqueText is the placeholder recorded for a part that is not text:
// "[opaque image: ~1600 tokens]".
func OpaqueText(what string, tokens int) string {
	return opaquePrefix + what + opaqueMid + strconv.Itoa(tokens) + opaqueSuffix
}

// CountOpaque wraps a token counter (nil means noa.DefaultCountTokens) so
// that an OpaqueText placeholder counts as the tokens it names.
func CountOpaque(base noa.TokenCountFn) noa.TokenCountFn {
	if base == nil {
		base = noa.DefaultCountTokens
	}
	return func(text string) int {
		if n, ok := opaqueTokens(text); ok {
			return n
		}
		return base(text)
	}
}

func opaqueTokens(text string) (int, bool) {
	if !strings.HasPrefix(text, opaquePrefix) || !strings.HasSuffix(text, opaqueSuffix) {
		return 0, false
	}
	mid := strings.LastIndex(text, opaqueMid)
	if mid < 0 {
		return 0, false
	}
	n, err := strconv.Atoi(text[mid+len(opaqueMid) : len(text)-len(opaqueSuffix)])
	return n, err == nil && n >= 0
}
