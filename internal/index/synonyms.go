package index

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
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

// lexicon is the synonym groups as an index uses them, all in analyzed
// terms.
type lexicon struct {
	// others maps a term to the other terms of every group it belongs to.
	others synonyms
	// groups maps a term to the ids of the groups it belongs to ("g0",
	// "g1", ...: the group's position in the list the lexicon was built
	// from), which documents carry in their synonym field.
	groups map[string][]string
	// members maps a group id to its terms, sorted.
	members map[string][]string
	// hash identifies the groups, so that an on-disk index whose synonym
	// field was built from other groups is rebuilt.
	hash string
	// skipped are the words that take no part (see newLexicon).
	skipped []string
}

// newLexicon analyzes every word of groups with a and links the terms of
// each group to one another. A word that analyzes to no term (a stop word)
// or to several (a phrase, an identifier split into its words) takes no
// part: a synonym stands for one query term. Groups left with fewer than
// two terms are dropped (their words are not skipped, just alike).
func newLexicon(a analysis.Analyzer, groups [][]string) *lexicon {
	lx := &lexicon{others: synonyms{}, groups: map[string][]string{}, members: map[string][]string{}}
	h := sha256.New()
	for i, g := range groups {
		var terms []string
		for _, w := range g {
			toks := a.Analyze([]byte(w))
			if len(toks) != 1 {
				lx.skipped = append(lx.skipped, w)
				continue
			}
			if t := string(toks[0].Term); !slices.Contains(terms, t) {
				terms = append(terms, t)
			}
		}
		if len(terms) < 2 {
			continue
		}
		id := fmt.Sprintf("g%d", i)
		slices.Sort(terms)
		lx.members[id] = terms
		fmt.Fprintf(h, "%s=%s\n", id, strings.Join(terms, ","))
		for _, t := range terms {
			lx.groups[t] = append(lx.groups[t], id)
			for _, o := range terms {
				if o != t {
					lx.others[t] = append(lx.others[t], o)
				}
			}
		}
	}
	for t, others := range lx.others {
		slices.Sort(others)
		lx.others[t] = slices.Compact(others)
	}
	lx.hash = hex.EncodeToString(h.Sum(nil)[:8])
	return lx
}

// synText is the synonym field of a document whose combined text analyzes
// to toks: the group id of every term that belongs to a group, once per
// occurrence, so a tool that says "directory" five times holds the folder
// group five times (BM25 saturates it like any term).
func (lx *lexicon) synText(toks analysis.TokenStream) string {
	var b strings.Builder
	for _, tok := range toks {
		for _, id := range lx.groups[string(tok.Term)] {
			b.WriteString(id)
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
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

// groupsOf returns, for each query term, the ids of its groups that give
// it a synonym the index holds (inIndex): a group whose only held term is
// the query term itself would match nothing the literal term does not.
func (lx *lexicon) groupsOf(terms []string, inIndex func(string) bool) map[string][]string {
	var out map[string][]string
	for _, t := range terms {
		for _, id := range lx.groups[t] {
			if !slices.ContainsFunc(lx.members[id], func(m string) bool { return m != t && inIndex(m) }) {
				continue
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[t] = append(out[t], id)
		}
	}
	return out
}
