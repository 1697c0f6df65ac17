package index

import "regexp"

// deprecatedMarker matches the ways tool descriptions say a tool is
// deprecated: a description that opens with the word, the word in capitals
// anywhere ("... DEPRECATED: Use read_text_file instead."), or a sentence
// that points to the replacement. A description about deprecation ("Check
// if packages are deprecated") matches none of them.
var deprecatedMarker = regexp.MustCompile(`^[\s\[(*_⚠️!]*(?i:deprecated)\b|\bDEPRECATED\b|(?i:\bdeprecated\s*[:.,;-]\s*(please\s+)?use\b|\bdeprecated\s+in\s+favou?r\s+of\b|\b(this|the)\s+(tool|function|endpoint|method|command)\s+is\s+deprecated\b)`)

// deprecated reports whether a tool description marks the tool deprecated.
func deprecated(description string) bool {
	return deprecatedMarker.MatchString(description)
}
