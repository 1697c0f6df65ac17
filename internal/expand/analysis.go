package expand

import (
	"fmt"
	"sync"
	"unicode"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	unicodetok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// Analysis names the word analysis a converted file is keyed by. It is
// stored in the file's header; Load refuses a file built with another one,
// because its keys would no longer be the terms the index holds. Change it
// whenever wordAnalyzer changes.
const Analysis = "unicode+possessive_en+lowercase+stop_en+stemmer_en_snowball/1"

// wordAnalyzer is internal/index's text analysis without the identifier
// splitter, which leaves a single lower-case word alone: Bleve's own
// filters, resolved by name, so the stems are exactly the index's.
var wordAnalyzer = sync.OnceValues(func() (analysis.Analyzer, error) {
	cache := registry.NewCache()
	a, err := cache.DefineAnalyzer("mcproxy_expand_word", map[string]any{
		"type":      custom.Name,
		"tokenizer": unicodetok.Name,
		"token_filters": []any{
			en.PossessiveName,
			lowercase.Name,
			en.StopName,
			en.SnowballStemmerName,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("defining word analyzer: %w", err)
	}
	return a, nil
})

// termOf returns the index term of one embedding word, or false when the
// word is not a plain word (punctuation, numbers with separators, several
// tokens) or is a stop word, which the index never holds.
func termOf(a analysis.Analyzer, word string) (string, bool) {
	if word == "" {
		return "", false
	}
	for _, r := range word {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return "", false
		}
	}
	toks := a.Analyze([]byte(word))
	if len(toks) != 1 {
		return "", false
	}
	return string(toks[0].Term), true
}
