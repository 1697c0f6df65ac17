package index

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Features are the retrieval mechanisms Search combines. Each can be turned
// off (or a weight changed) to measure what it adds: the profiler's ablation
// (`mcproxy bench --ablation`) builds one index per variant. DefaultFeatures
// is what mcproxy uses; docs/retrieval.md records why.
//
// Analysis features change the mapping, so an on-disk index built with other
// analysis is rebuilt when it is opened.
type Features struct {
	// Stemmer reduces words to stems: "snowball" (Snowball English),
	// "porter" (the older Porter stemmer) or "none".
	Stemmer string
	// StopWords drops English stop words ("the", "of", "to", ...) from
	// documents and queries.
	StopWords bool
	// SplitIdentifiers adds the words of code-style identifiers
	// (read_text_file, readTextFile, read-text-file) next to the identifier.
	SplitIdentifiers bool
	// CJKBigrams indexes Chinese, Japanese and Korean text as overlapping
	// character pairs instead of single characters.
	CJKBigrams bool
	// Params indexes parameter names, descriptions and enum values.
	Params bool
	// ParamDescriptions says where parameter descriptions are indexed
	// when Params is set: ParamDescriptionsEverywhere (the params field
	// and the combined one), ParamDescriptionsParamsField (the params
	// field only), ParamDescriptionsAllField (the combined field only) or
	// ParamDescriptionsOff; "" means everywhere.
	ParamDescriptions string
	// SkipSiblingNames indexes a tool's description and parameter
	// descriptions without the code-style names of the other tools of its
	// server ("use variant_searcher instead", "the telecode from
	// get-tickets"): those words are about the other tool.
	SkipSiblingNames bool

	// Fields are the fields each query term is searched in, with boosts.
	Fields []FieldBoost

	// ServerMention: when the query names a connected server ("github:
	// create issue", "with desktop commander"), that server's tools gain
	// ServerMentionWeight times the best score of the search, so they lead
	// unless another tool matches far better.
	ServerMention       bool
	ServerMentionWeight float64
	// ExactName: a query holding a tool's exact id ("git:git_log") or
	// code-style name ("read_text_file") ranks that tool first.
	ExactName bool
	// ServerPrior, when positive, adds to each candidate ServerPrior times
	// the best score times its server's coverage of the query (the share
	// of the query's weighted terms found anywhere in the server's tools),
	// so a tool whose own text is thin still ranks well on a server that is
	// clearly about the query.
	ServerPrior float64
	// ExpansionWeight scales the weights an Options.Expander gives its
	// terms; 0 turns expansion off even when an Expander is set.
	ExpansionWeight float64
	// Synonyms indexes, for each tool, the synonym groups its words belong
	// to (the built-in lexicon, synonyms.txt, plus Options.Synonyms) in a
	// field of their own, and searches a query word's groups beside the
	// word itself: a tool saying "directory" counts as matching the query
	// word "folder". A group is one term of that field, so a tool using
	// several words of a group gains as BM25 lets one repeated term gain,
	// not once per word. SynonymWeight is the groups' boost; at 1 a tool
	// matching only a synonym scores like one matching the word in the
	// combined field alone.
	Synonyms      bool
	SynonymWeight float64
	// LearnedWeight is the boost of words tools learned from use
	// (Options.Learned) when a query word matches them; 0 leaves them
	// unsearched.
	LearnedWeight float64
	// ExpansionGrouped searches each expansion inside the clause of the
	// query word it came from (WeightedTerm.From), so a tool matching a
	// word or its neighbors counts as matching that word once; otherwise
	// all expansions form one extra clause of the query.
	ExpansionGrouped bool
	// DeprecatedWeight multiplies the score of a tool whose description
	// says it is deprecated ("DEPRECATED: Use read_text_file instead."), so
	// the tool its server recommends instead ranks first; 1 turns it off. An
	// exact name in the query still ranks the deprecated tool first.
	DeprecatedWeight float64
}

// FieldBoost is one field a query term is searched in, with its boost.
// Field is one of "all", "name", "description", "params".
type FieldBoost struct {
	Field string
	Boost float64
}

// Where parameter descriptions are indexed (Features.ParamDescriptions).
const (
	ParamDescriptionsEverywhere  = "everywhere"
	ParamDescriptionsParamsField = "params-field"
	ParamDescriptionsAllField    = "all-field"
	ParamDescriptionsOff         = "off"
)

// DefaultFeatures returns the features mcproxy searches with, chosen on
// the tuning halves of the profiler's query sets (see docs/retrieval.md).
func DefaultFeatures() Features {
	return Features{
		Stemmer:             "snowball",
		StopWords:           true,
		SplitIdentifiers:    true,
		CJKBigrams:          true,
		Params:              true,
		ParamDescriptions:   ParamDescriptionsAllField,
		SkipSiblingNames:    true,
		Fields:              []FieldBoost{{fieldAll, 1}, {fieldName, 0.5}, {fieldParams, 0.25}},
		ServerMention:       true,
		ServerMentionWeight: 0.5,
		ExactName:           true,
		ExpansionWeight:     1,
		Synonyms:            true,
		SynonymWeight:       1,
		LearnedWeight:       DefaultLearnedWeight,
		DeprecatedWeight:    0.5,
	}
}

func (f Features) validate() error {
	switch f.Stemmer {
	case "snowball", "porter", "none":
	default:
		return fmt.Errorf("invalid stemmer %q: want snowball, porter or none", f.Stemmer)
	}
	switch f.ParamDescriptions {
	case "", ParamDescriptionsEverywhere, ParamDescriptionsParamsField, ParamDescriptionsAllField, ParamDescriptionsOff:
	default:
		return fmt.Errorf("invalid param descriptions %q: want %s, %s, %s or %s", f.ParamDescriptions,
			ParamDescriptionsEverywhere, ParamDescriptionsParamsField, ParamDescriptionsAllField, ParamDescriptionsOff)
	}
	if len(f.Fields) == 0 {
		return fmt.Errorf("no fields to search: want at least one of all, name, description, params")
	}
	for _, fb := range f.Fields {
		switch fb.Field {
		case fieldAll, fieldName, fieldDescription, fieldParams:
		default:
			return fmt.Errorf("invalid field %q: want all, name, description or params", fb.Field)
		}
		if fb.Boost <= 0 {
			return fmt.Errorf("field %s: boost %v, want > 0", fb.Field, fb.Boost)
		}
	}
	if f.DeprecatedWeight <= 0 || f.DeprecatedWeight > 1 {
		return fmt.Errorf("deprecated weight %v: want more than 0 and at most 1 (1: no demotion)", f.DeprecatedWeight)
	}
	if f.ServerMentionWeight < 0 || f.ExpansionWeight < 0 || f.ServerPrior < 0 || f.SynonymWeight < 0 || f.LearnedWeight < 0 {
		return fmt.Errorf("negative weight (server mention %v, expansion %v, server prior %v, synonym %v, learned %v)",
			f.ServerMentionWeight, f.ExpansionWeight, f.ServerPrior, f.SynonymWeight, f.LearnedWeight)
	}
	return nil
}

// WeightedTerm is an analyzed index term with a weight in (0, 1].
type WeightedTerm struct {
	Term   string
	Weight float64
	// From is the query term it expands, when known.
	From string
}

// ExpandFunc proposes extra terms for a query: terms are the query's
// analyzed terms, inIndex tells whether the index holds a term. It must be
// safe for concurrent use and not retain its arguments.
type ExpandFunc func(terms []string, inIndex func(term string) bool) []WeightedTerm

// serverKeys returns the spellings under which a query can name server:
// its letters and digits lower-cased and run together ("desktop-commander"
// → "desktopcommander"), and the same without the words "mcp" and "server"
// that many server names carry ("mcp-deepwiki" → "deepwiki"). Keys shorter
// than three characters are dropped: they would match by accident.
func serverKeys(server string) []string {
	words := wordsOf(server)
	var keys []string
	add := func(k string) {
		if len(k) >= 3 && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	add(strings.Join(words, ""))
	var core []string
	for _, w := range words {
		if w != "mcp" && w != "server" {
			core = append(core, w)
		}
	}
	add(strings.Join(core, ""))
	return keys
}

// wordsOf splits s into lower-case runs of letters and digits, also at
// camelCase boundaries.
func wordsOf(s string) []string {
	var words []string
	for _, p := range splitIdentifier([]byte(s)) {
		words = append(words, strings.ToLower(s[p[0]:p[1]]))
	}
	return words
}

// mentionedServers returns the servers whose key equals one, two or three
// consecutive words of the query, sorted.
func mentionedServers(q string, keys map[string][]string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	found := map[string]bool{}
	for i := range words {
		joined := ""
		for n := 0; n < 3 && i+n < len(words); n++ {
			joined += words[i+n]
			for _, s := range keys[joined] {
				found[s] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// quotedTools returns the ids of tools the query names exactly: by id
// ("git:git_log") or by a code-style name ("read_text_file", "getStories")
// that cannot be an ordinary word. names maps a lower-cased tool name to
// its ids, ids holds every lower-cased id.
func quotedTools(q string, names map[string][]string, ids map[string]string) []string {
	var out []string
	for _, raw := range strings.Fields(q) {
		tok := strings.TrimFunc(raw, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
		})
		if tok == "" {
			continue
		}
		lower := strings.ToLower(tok)
		if id, ok := ids[lower]; ok {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
			continue
		}
		if !codeStyle(tok) {
			continue
		}
		for _, id := range names[lower] {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// codeStyle reports whether tok looks like an identifier rather than a
// word: it has an underscore, hyphen or dot between letters, or an
// upper-case letter after a lower-case one.
func codeStyle(tok string) bool {
	return len(splitIdentifier([]byte(tok))) > 1
}

// DefaultLearnedWeight is Features.LearnedWeight by default: a word a tool
// learned counts a little under the same word in the tool's own combined
// text, so a tool that uses the word itself ranks above one that learned it.
// Chosen with `mcproxy bench --learn` (docs/retrieval.md).
const DefaultLearnedWeight = 0.6
