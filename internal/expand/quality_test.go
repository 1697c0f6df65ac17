package expand

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

var sweep = flag.Bool("expand.sweep", false, "log a grid of expansion options on the tune halves (a tuning aid, slow)")

// switchable lets one index try several expanders: the index keeps the
// function it was built with, which calls whichever Expander is current.
type switchable struct {
	mu  sync.Mutex
	cur *Expander // nil = no expansion
}

func (s *switchable) set(e *Expander) {
	s.mu.Lock()
	s.cur = e
	s.mu.Unlock()
}

func (s *switchable) expander(vocab []string) index.ExpandFunc {
	return func(terms []string, inIndex func(string) bool) []index.WeightedTerm {
		s.mu.Lock()
		e := s.cur
		s.mu.Unlock()
		if e == nil {
			return nil
		}
		return e.IndexFunc()(terms, inIndex)
	}
}

type evalCorpus struct {
	name    string
	ix      *index.Index
	sw      *switchable
	vocab   []string
	queries []gradedQuery
}

// productionIndex loads tools into the production index (default
// features) with a switchable expander.
func productionIndex(t testing.TB, tools []config.ToolMetadata) (*index.Index, *switchable) {
	t.Helper()
	sw := &switchable{}
	ix, err := index.New(index.Options{Expander: sw.expander})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	servers, groups := byServer(tools)
	for _, s := range servers {
		if err := ix.Upsert(s, groups[s]); err != nil {
			t.Fatal(err)
		}
	}
	return ix, sw
}

func evalCorpora(t testing.TB) []evalCorpus {
	t.Helper()
	var out []evalCorpus
	for _, c := range corpora {
		ix, sw := productionIndex(t, c.tools(t))
		out = append(out, evalCorpus{name: c.name, ix: ix, sw: sw, vocab: ix.Vocabulary(), queries: loadQueries(t, c.queries)})
	}
	return out
}

// measure scores one split of c with opts (nil = no expansion).
func measure(t testing.TB, c evalCorpus, v *Vectors, opts *Options, split string) metrics {
	t.Helper()
	if opts == nil {
		c.sw.set(nil)
	} else {
		c.sw.set(New(v, c.vocab, *opts))
	}
	defer c.sw.set(nil)
	var m metrics
	for _, q := range c.queries {
		if q.Split != split {
			continue
		}
		res, err := c.ix.Search(context.Background(), q.Query, 10)
		if err != nil {
			t.Fatal(err)
		}
		hits := make([]hit, len(res))
		for i, h := range res {
			hits[i] = hit{h.ID, h.Score}
		}
		a, b, r := score(hits, q.Labels)
		m.hit5 += a
		m.mrr += b
		m.recall5 += r
		m.n++
	}
	m.hit5 /= float64(m.n)
	m.mrr /= float64(m.n)
	m.recall5 /= float64(m.n)
	return m
}

func (m metrics) String() string {
	return fmt.Sprintf("hit@5 %.3f  MRR %.3f  recall@5 %.3f  (n=%d)", m.hit5, m.mrr, m.recall5, m.n)
}

// TestExpansionEffect measures the default expander on the production
// index (synonym lexicon included) against no expansion. Decisions were made
// on the tune halves only (see Options); the held-back halves are logged,
// not asserted. The checks: on the tune halves expansion must not lose
// hit@5 or MRR on either corpus, and must gain hit@5 on LiveMCPTool, whose
// paraphrased queries are what it is for.
func TestExpansionEffect(t *testing.T) {
	v := vectors(t)
	opts := Options{}
	for _, c := range evalCorpora(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, split := range []string{"tune", "heldout"} {
				base := measure(t, c, v, nil, split)
				exp := measure(t, c, v, &opts, split)
				t.Logf("%-7s without: %v", split, base)
				t.Logf("%-7s with:    %v", split, exp)
				if split != "tune" {
					continue
				}
				if exp.hit5 < base.hit5 || exp.mrr < base.mrr-0.005 {
					t.Errorf("tune: got hit@5 %.3f MRR %.3f with expansion, want at least %.3f and %.3f as without",
						exp.hit5, exp.mrr, base.hit5, base.mrr)
				}
				if c.name == "livemcptool" && exp.hit5 <= base.hit5 {
					t.Errorf("tune: got hit@5 %.3f with expansion, want more than %.3f without", exp.hit5, base.hit5)
				}
			}
		})
	}
}
