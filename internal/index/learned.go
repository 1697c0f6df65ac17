package index

import (
	"fmt"
	"slices"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Relearn re-reads Options.Learned for tool id and updates the index: the
// documents of its server are rebuilt from the tools last upserted (one
// batch, as an Upsert of the same list). A tool of a server not upserted
// since the index opened gets its learned words with that server's first
// Upsert.
func (ix *Index) Relearn(id string) error {
	server, _, ok := config.SplitToolID(id)
	if !ok {
		return fmt.Errorf("relearning %q: want a tool id server:tool", id)
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	tools, ok := ix.sources[server]
	if !ok {
		return nil
	}
	docs := make(map[string]map[string]any, len(tools))
	siblings := siblingNames(tools)
	for _, t := range tools {
		docs[t.ID()] = document(t, ix.features, siblings)
	}
	return ix.replace(server, docs)
}

// Terms returns text's distinct terms as the index analyzes queries and
// tools.
func (ix *Index) Terms(text string) []string { return ix.analyze(text) }

// ToolTerms returns the distinct terms of tool id's own text, sorted (nil
// for a tool the index does not hold).
func (ix *Index) ToolTerms(id string) []string {
	server, name, _ := config.SplitToolID(id)
	ix.statsMu.RLock()
	defer ix.statsMu.RUnlock()
	return slices.Clone(ix.stats[server].ToolTerms[name])
}

// DocFreq returns how many tools hold term in their own text, and how many
// tools the index holds.
func (ix *Index) DocFreq(term string) (n, tools int) {
	ix.statsMu.RLock()
	defer ix.statsMu.RUnlock()
	return ix.lookup.vocab[term], ix.lookup.tools
}

// learnedOnly returns the terms of the query that tool (server, name) matches
// only through its learned words. The caller holds statsMu for reading.
func (ix *Index) learnedOnly(terms []string, server, name string) []string {
	st := ix.stats[server]
	learned := st.Learned[name]
	if len(learned) == 0 {
		return nil
	}
	var out []string
	for _, t := range terms {
		if _, ok := slices.BinarySearch(learned, t); !ok {
			continue
		}
		if _, own := slices.BinarySearch(st.ToolTerms[name], t); !own {
			out = append(out, t)
		}
	}
	return out
}
