package learn

import (
	"strings"
	"unicode"

	"go.uber.org/zap"
)

// Index is what a Learner needs of the search index (*index.Index).
type Index interface {
	// Terms analyzes text as queries are analyzed.
	Terms(text string) []string
	// ToolTerms are the distinct terms of a tool's own text, sorted.
	ToolTerms(id string) []string
	// DocFreq is how many tools hold term, and how many tools there are.
	DocFreq(term string) (n, tools int)
	// Relearn re-reads a tool's learned words into the index.
	Relearn(id string) error
}

// Learner turns the episodes of every session into learned words: it
// follows searches, descriptions and calls, and when a call teaches, it
// stores the words and updates the index. Its methods are safe for
// concurrent use.
type Learner struct {
	Store    *Store
	Index    Index
	Episodes Episodes
	// Log receives one line per lesson and any failure to store one (nil:
	// none).
	Log *zap.Logger

	later later // CalledLater's worker (later.go)
}

// commonShare: a word held by more than this share of the tools (and by
// more than commonFloor of them) discriminates little, and is held back.
const (
	commonShare = 0.05
	commonFloor = 3
)

// Searched records a retrieve_tools search and the ids it showed.
func (l *Learner) Searched(session, query string, shown []string) {
	l.Episodes.Searched(session, query, shown)
}

// Refresh picks up edits another process made to the store (`mcproxy
// learned forget` while the proxy runs): the tools whose words changed are
// re-indexed. Call it before a search: it first waits for the lessons
// CalledLater left pending, and costs one stat when nothing changed.
func (l *Learner) Refresh() {
	l.settle()
	changed, err := l.Store.Refresh()
	if err != nil {
		l.logger().Warn("learned words not reloaded", zap.Error(err))
	}
	for _, id := range changed {
		if err := l.Index.Relearn(id); err != nil {
			l.logger().Warn("learned words not indexed", zap.String("tool", id), zap.Error(err))
		}
	}
}

func (l *Learner) logger() *zap.Logger {
	if l.Log == nil {
		return zap.NewNop()
	}
	return l.Log
}

// Described records a describe_tool call.
func (l *Learner) Described(session, tool string) { l.Episodes.Described(session, tool) }

// Called records a call of tool; a successful one that ends a teaching
// episode stores its words and updates the index. It returns the words
// taught (nil when the call taught nothing).
func (l *Learner) Called(session, tool string, ok bool) []Word {
	queries := l.Episodes.Called(session, tool, ok)
	if len(queries) == 0 {
		return nil
	}
	return l.teach(tool, queries)
}

// teach stores what queries teach of tool and updates the index; it
// returns the words taught.
func (l *Learner) teach(tool string, queries []string) []Word {
	words := l.Words(tool, queries)
	if len(words) == 0 {
		return nil
	}
	changed, err := l.Store.Teach(tool, words)
	log := l.logger()
	if err != nil {
		log.Warn("learned words not saved", zap.String("tool", tool), zap.Error(err))
	}
	if changed {
		if err := l.Index.Relearn(tool); err != nil {
			log.Warn("learned words not indexed", zap.String("tool", tool), zap.Error(err))
		}
	}
	terms := make([]string, len(words))
	for i, w := range words {
		terms[i] = w.Term
	}
	log.Debug("learned from use", zap.String("tool", tool), zap.Strings("words", terms), zap.Bool("index_changed", changed))
	return words
}

// Words returns the evidence the queries of an episode give for tool: their
// terms the tool's own text lacks, each once; numbers, names and words many
// tools hold are marked Hold.
func (l *Learner) Words(tool string, queries []string) []Word {
	own := map[string]bool{}
	for _, t := range l.Index.ToolTerms(tool) {
		own[t] = true
	}
	held := map[string]bool{}
	for _, q := range queries {
		for _, n := range names(q) {
			for _, t := range l.Index.Terms(n) {
				held[t] = true
			}
		}
	}
	seen := map[string]bool{}
	var out []Word
	for _, q := range queries {
		for _, t := range l.Index.Terms(q) {
			if own[t] || seen[t] {
				continue
			}
			seen[t] = true
			n, tools := l.Index.DocFreq(t)
			hold := held[t] || strings.ContainsFunc(t, unicode.IsDigit) ||
				n > commonFloor && float64(n) > commonShare*float64(tools)
			out = append(out, Word{Term: t, Hold: hold})
		}
	}
	return out
}

// names returns the words of q that look like names: capitalized words
// that do not start a sentence ("remember that Alice likes tea").
func names(q string) []string {
	var out []string
	start := true
	for _, w := range strings.Fields(q) {
		trimmed := strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if trimmed != "" {
			r := []rune(trimmed)
			if !start && unicode.IsUpper(r[0]) {
				out = append(out, trimmed)
			}
			start = false
		}
		if strings.ContainsAny(w[len(w)-1:], ".!?") {
			start = true
		}
	}
	return out
}
