package index

import (
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// siblingNames returns the names of tools that a description can name
// without meaning an ordinary word (codeStyle: "get-tickets",
// "variant_searcher", "readFile"), for Features.SkipSiblingNames. A plain
// name ("search", "think") is left out: removing it would remove the word
// from every tool of the server.
func siblingNames(tools []config.ToolMetadata) []string {
	var names []string
	for _, t := range tools {
		if codeStyle(t.Name) {
			names = append(names, t.Name)
		}
	}
	return names
}

// withoutNames returns text without the whole-identifier occurrences of
// names other than own. An occurrence is whole when no identifier character
// (an ASCII letter or digit, '_' or '-') touches it on either side, so
// "get-tickets" is not cut out of "get-tickets-v2".
func withoutNames(text string, names []string, own string) string {
	for _, n := range names {
		if n == own || !strings.Contains(text, n) {
			continue
		}
		var b strings.Builder
		rest := text
		for {
			i := strings.Index(rest, n)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			end := i + len(n)
			whole := (i == 0 || !identByte(rest[i-1])) && (end == len(rest) || !identByte(rest[end]))
			b.WriteString(rest[:i])
			if !whole {
				b.WriteString(n)
			}
			rest = rest[end:]
		}
		text = b.String()
	}
	return text
}

func identByte(c byte) bool {
	return c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
