package index

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"
)

// identifierFilterName is the registry name of identifierFilter. It is
// stored in on-disk index mappings, so renaming it needs a mappingVersion
// bump.
const identifierFilterName = "mcproxy_identifier"

func init() {
	// Bleve resolves analysis components by name from a process-wide
	// registry; registering once at init is how custom components join it.
	err := registry.RegisterTokenFilter(identifierFilterName,
		func(map[string]any, *registry.Cache) (analysis.TokenFilter, error) {
			return identifierFilter{}, nil
		})
	if err != nil {
		panic(err) // only on a duplicate name, a programming error
	}
}

// identifierFilter splits identifiers into their words so that a query in
// plain English meets tool names written in code style: read_text_file,
// readTextFile, read-text-file and fs.read.text all yield read, text, file.
// A token that splits is kept whole as well (first), so a query quoting the
// exact identifier still scores it highest. It must run before lowercasing,
// which would erase the camelCase boundaries.
type identifierFilter struct{}

func (identifierFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	out := make(analysis.TokenStream, 0, len(input))
	for _, tok := range input {
		parts := splitIdentifier(tok.Term)
		if len(parts) <= 1 {
			out = append(out, tok)
			continue
		}
		out = append(out, tok)
		for _, p := range parts {
			out = append(out, &analysis.Token{
				Term:     tok.Term[p[0]:p[1]],
				Start:    tok.Start + p[0],
				End:      tok.Start + p[1],
				Position: tok.Position,
				Type:     tok.Type,
			})
		}
	}
	return out
}

// splitIdentifier returns the [start, end) byte ranges of the words in
// term: runs of letters and digits separated by any other character, with a
// new word starting at a lower-or-digit→Upper change (readFile) and before
// the last capital of a capital run followed by a lower-case letter
// (HTMLParser → HTML, Parser). Digits stay with the word before them (v2,
// base64).
func splitIdentifier(term []byte) [][2]int {
	var parts [][2]int
	start := -1
	var prev, prev2 rune // the two runes before the current one within a word
	for i := 0; i < len(term); {
		r, size := utf8.DecodeRune(term[i:])
		alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case !alnum:
			if start >= 0 {
				parts = append(parts, [2]int{start, i})
				start = -1
			}
		case start < 0:
			start = i
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			parts = append(parts, [2]int{start, i})
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2):
			// HTMLParser: at 'a', the word "Parser" began at 'P'.
			pStart := i - utf8.RuneLen(prev)
			if pStart > start {
				parts = append(parts, [2]int{start, pStart})
				start = pStart
			}
		}
		if alnum && start >= 0 {
			if start == i {
				prev2 = 0
			} else {
				prev2 = prev
			}
			prev = r
		} else {
			prev, prev2 = 0, 0
		}
		i += size
	}
	if start >= 0 {
		parts = append(parts, [2]int{start, len(term)})
	}
	return parts
}
