package expand

import (
	"github.com/mcproxy/mcproxy/internal/index"
)

// ForIndex adapts the vectors to index.Options.Expander: the index calls
// it with its vocabulary whenever that changed (servers come and go), and
// it gathers the vectors of those terms into a new Expander (about a
// millisecond per few thousand terms) whose Expand serves the searches
// until the next change.
func ForIndex(v *Vectors, opts Options) func(vocab []string) index.ExpandFunc {
	return func(vocab []string) index.ExpandFunc {
		return New(v, vocab, opts).IndexFunc()
	}
}

// IndexFunc returns e.Expand in the form index.ExpandFunc takes.
func (e *Expander) IndexFunc() index.ExpandFunc {
	return func(terms []string, inIndex func(string) bool) []index.WeightedTerm {
		exp := e.Expand(terms, inIndex)
		if len(exp) == 0 {
			return nil
		}
		out := make([]index.WeightedTerm, len(exp))
		for i, x := range exp {
			out[i] = index.WeightedTerm{Term: x.Term, Weight: x.Weight, From: x.From}
		}
		return out
	}
}
