package index

import (
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// siblingNames returns the set of tool names that a description can name
// without meaning an ordinary word (codeStyle: "get-tickets",
// "variant_searcher", "readFile"), for Features.SkipSiblingNames. A plain
// name ("search", "think") is left out: removing it would remove the word
// from every tool of the server.
func siblingNames(tools []config.ToolMetadata) map[string]bool {
	names := map[string]bool{}
	for _, t := range tools {
		if codeStyle(t.Name) {
			names[t.Name] = true
		}
	}
	return names
}

// withoutNames returns text without the whole-identifier occurrences of
// names other than own. An occurrence is whole when it is a maximal run of
// identifier characters (ASCII letters and digits, '_', '-', '.'), a
// sentence's final dots aside, so "get-tickets" is not cut out of
// "get-tickets-v2" but is out of "use get-tickets.". One pass over text,
// whatever the number of names.
func withoutNames(text string, names map[string]bool, own string) string {
	if len(names) == 0 {
		return text
	}
	var b strings.Builder
	last := 0 // text[last:] is not yet written
	for i := 0; i < len(text); {
		if !identByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && identByte(text[j]) {
			j++
		}
		word := strings.TrimRight(text[i:j], ".")
		if word != own && names[word] {
			b.WriteString(text[last:i])
			last = i + len(word)
		}
		i = j
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

func identByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
