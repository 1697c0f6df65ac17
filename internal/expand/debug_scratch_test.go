package expand

import (
	"fmt"
	"testing"
)

func TestScratchShow(t *testing.T) {
	v := vectors(t)
	c := evalCorpora(t)[1]
	h := &harness{}
	_ = h
	l := New(v, c.vocab, Options{})
	known := map[string]bool{}
	for _, w := range c.vocab {
		known[w] = true
	}
	n := 0
	for _, q := range c.queries {
		if q.Split != "tune" || n > 25 {
			continue
		}
		n++
		terms := analyzeQ(q.Query)
		fmt.Printf("%s %q\n  terms %v\n", q.ID, q.Query, terms)
		for _, e := range l.Expand(terms, func(s string) bool { return known[s] }) {
			fmt.Printf("    %s <- %s %.3f\n", e.Term, e.From, e.Weight)
		}
	}
}

func analyzeQ(q string) []string {
	a, _ := wordAnalyzer()
	var out []string
	for _, tok := range a.Analyze([]byte(q)) {
		out = append(out, string(tok.Term))
	}
	return out
}
