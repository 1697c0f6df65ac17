package index

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
)

// builtinSynonyms is the lexicon every index starts from (see the file's
// header for how it was chosen).
//
//go:embed synonyms.txt
var builtinSynonyms string

// synonyms maps an analyzed term to the other analyzed terms of every group
// it belongs to, each list sorted and free of duplicates. It is built once
// per Index and never modified.
type synonyms map[string][]string

// builtinGroups returns the built-in lexicon's groups, as written (not
// analyzed), in file order.
func builtinGroups() [][]string {
	groups, err := parseSynonyms(builtinSynonyms)
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return groups
}

// parseSynonyms reads groups in the lexicon's text format: one group per
// line, words separated by commas, blank lines and lines starting with '#'
// ignored. A group needs two words or more.
func parseSynonyms(text string) ([][]string, error) {
	var groups [][]string
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var g []string
		for _, w := range strings.Split(line, ",") {
			if w = strings.TrimSpace(w); w != "" {
				g = append(g, w)
			}
		}
		if len(g) < 2 {
			return nil, fmt.Errorf("line %d: a synonym group needs at least two words, got %q", n+1, line)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// newSynonyms analyzes every word of groups with a and links the terms of
// each group to one another. A word that analyzes to no term (a stop word)
// or to several (a phrase, an identifier split into its words) takes no
// part: a synonym stands for one query term. skipped lists those words.
func newSynonyms(a analysis.Analyzer, groups [][]string) (s synonyms, skipped []string) {
	s = synonyms{}
	for _, g := range groups {
		var terms []string
		for _, w := range g {
			toks := a.Analyze([]byte(w))
			if len(toks) != 1 {
				skipped = append(skipped, w)
				continue
			}
			if t := string(toks[0].Term); !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t {
					s[t] = append(s[t], o)
				}
			}
		}
	}
	for t, others := range s {
		slices.Sort(others)
		s[t] = slices.Compact(others)
	}
	return s, skipped
}

// of returns, for each query term, its synonyms that the index holds
// (inIndex) and that are not query terms themselves; terms without any are
// absent from the result, which is nil when no term has one.
func (s synonyms) of(terms []string, inIndex func(string) bool) map[string][]string {
	var out map[string][]string
	for _, t := range terms {
		for _, o := range s[t] {
			if slices.Contains(terms, o) || !inIndex(o) {
				continue
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[t] = append(out[t], o)
		}
	}
	return out
}
