package bench

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/learn"
	"github.com/mcproxy/mcproxy/internal/retrieval"
)

// LearnLimit is how many tools the simulated retrieve_tools answer shows.
const LearnLimit = 5

// LearnResult is one run of the learning simulation over a corpus (see
// SimulateLearning).
type LearnResult struct {
	Corpus string `json:"corpus"`
	// Noise is the share of episodes that end at a wrong tool.
	Noise float64 `json:"noise"`
	Pairs int     `json:"pairs"`
	// Taught is how many episodes stored words.
	Taught int `json:"taught"`
	// Before and After score the later phrasings without and with what the
	// first ones taught.
	Before Quality `json:"before"`
	After  Quality `json:"after"`
	// Standard scores the corpus's standard query set, by split ("tune",
	// "heldout"), before and after learning.
	Standard []LearnStandard `json:"standard,omitempty"`
}

// LearnStandard is one half of a standard query set before and after.
type LearnStandard struct {
	Split  string  `json:"split"`
	Before Quality `json:"before"`
	After  Quality `json:"after"`
}

// SimulateLearning measures what learning from use does on corpus c. The
// first phrasing of each pair is searched as an agent would: when its tool
// is in the first LearnLimit, the agent calls it; otherwise it searches
// again with words from the tool's own name and description (describing it
// when even that misses), then calls it. With noise > 0, that share of the
// episodes (chosen by a fixed seed) end at a wrong tool instead: the first
// search's best hit that is not the target, called successfully. After every
// first phrasing, the later phrasings are scored, and so is the standard
// query set (nil: none) to show what learning costs elsewhere. The ranking
// is production's (the default arm's index metadata, the retrieval
// pipeline, no expansion and no dense) with the learned field fed by a
// learn.Store, and the run is deterministic.
//
// ixOpts are the index options of the run (synonyms, expansion); its Dir
// must be empty and its Learned is the simulation's own.
func SimulateLearning(ctx context.Context, c *Corpus, pairs, standard *QuerySet, noise float64, ixOpts index.Options) (LearnResult, error) {
	res := LearnResult{Corpus: c.Name, Noise: noise}
	clock := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	store, err := learn.Open(learn.Options{Now: func() time.Time { return clock }})
	if err != nil {
		return res, err
	}
	ixOpts.Learned = store.Terms
	ix, err := index.New(ixOpts)
	if err != nil {
		return res, err
	}
	p, err := retrieval.New(ix, nil, retrieval.Options{})
	if err != nil {
		ix.Close()
		return res, err
	}
	defer p.Close()
	a, err := Registry().Resolve(config.DefaultArm)
	if err != nil {
		return res, err
	}
	if _, err := ingest(ctx, p, a, c.Tools); err != nil {
		return res, err
	}
	l := &learn.Learner{Store: store, Index: ix}
	search := func(q string) ([]string, error) {
		r, err := p.Search(ctx, q, LearnLimit)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(r.Hits))
		for i, h := range r.Hits {
			ids[i] = h.ID
		}
		return ids, nil
	}
	score := func(qs []Query) (Quality, error) {
		rankings := make([][]string, len(qs))
		for i, q := range qs {
			r, err := p.Search(ctx, q.Query, 10)
			if err != nil {
				return Quality{}, err
			}
			for _, h := range r.Hits {
				rankings[i] = append(rankings[i], h.ID)
			}
		}
		return Score(qs, rankings), nil
	}

	first, later := pairs.withSplit(SplitFirst), pairs.withSplit(SplitLater)
	res.Pairs = len(first)
	if res.Before, err = score(later); err != nil {
		return res, err
	}
	var std []LearnStandard
	if standard != nil {
		for _, split := range []string{SplitTune, SplitHeldout} {
			q, err := score(standard.withSplit(split))
			if err != nil {
				return res, err
			}
			std = append(std, LearnStandard{Split: split, Before: q})
		}
	}

	byID := map[string]config.Tool{}
	for _, t := range c.Tools {
		byID[t.ID] = t
	}
	rng := rand.New(rand.NewPCG(20261201, uint64(noise*1000)))
	for _, q := range first {
		target := q.Labels[slices.IndexFunc(q.Labels, func(l Label) bool { return l.Relevance == 2 })].ToolID
		session := q.Pair
		shown, err := search(q.Query)
		if err != nil {
			return res, err
		}
		l.Searched(session, q.Query, shown)
		called := target
		if rng.Float64() < noise {
			// A wrong tool: the best hit that is not the target, or any
			// other tool of the corpus.
			called = ""
			for _, id := range shown {
				if id != target {
					called = id
					break
				}
			}
			if called == "" {
				called = c.Tools[rng.IntN(len(c.Tools))].ID
			}
			if !slices.Contains(shown, called) {
				l.Described(session, called)
			}
		} else if !slices.Contains(shown, target) {
			again := toolWords(byID[target])
			shown, err := search(again)
			if err != nil {
				return res, err
			}
			l.Searched(session, again, shown)
			if !slices.Contains(shown, target) {
				l.Described(session, target)
			}
		}
		if l.Called(session, called, true) != nil {
			res.Taught++
		}
		clock = clock.Add(time.Hour)
	}

	if res.After, err = score(later); err != nil {
		return res, err
	}
	for i := range std {
		if std[i].After, err = score(standard.withSplit(std[i].Split)); err != nil {
			return res, err
		}
	}
	res.Standard = std
	return res, nil
}

// toolWords is what a simulated agent searches when its words missed: the
// tool's name as words and the start of its description.
func toolWords(t config.Tool) string {
	name := strings.NewReplacer("_", " ", "-", " ").Replace(t.Name)
	words := strings.Fields(t.Description)
	if len(words) > 8 {
		words = words[:8]
	}
	return name + " " + strings.Join(words, " ")
}

// LearnMarkdown renders simulation results as a markdown table.
func LearnMarkdown(rs []LearnResult) string {
	var b strings.Builder
	b.WriteString("| corpus | noise | pairs | taught | later R@1 | later R@5 | later MRR | standard R@5 (tune / heldout) | standard MRR (tune / heldout) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	pct := func(q Quality) string { return fmt.Sprintf("%.3f", q.RecallAt5) }
	for _, r := range rs {
		std := func(f func(Quality) float64) string {
			var parts []string
			for _, s := range r.Standard {
				parts = append(parts, fmt.Sprintf("%.3f → %.3f", f(s.Before), f(s.After)))
			}
			return strings.Join(parts, " / ")
		}
		fmt.Fprintf(&b, "| %s | %.0f%% | %d | %d | %.3f → %.3f | %s → %s | %.3f → %.3f | %s | %s |\n",
			r.Corpus, r.Noise*100, r.Pairs, r.Taught,
			r.Before.RecallAt1, r.After.RecallAt1, pct(r.Before), pct(r.After), r.Before.MRR, r.After.MRR,
			std(func(q Quality) float64 { return q.RecallAt5 }), std(func(q Quality) float64 { return q.MRR }))
	}
	return b.String()
}

// builtinPairs are our pair sets for the learning simulation: needs phrased
// twice, as a user repeats them on different occasions.
//
//go:embed queries/*.pairs.json
var builtinPairs embed.FS

// BuiltinPairs returns the built-in pair set of each corpus in cs that has
// one, by corpus name.
func BuiltinPairs(cs []*Corpus) (map[string]*QuerySet, error) {
	entries, err := builtinPairs.ReadDir("queries")
	if err != nil {
		return nil, fmt.Errorf("reading built-in pair sets: %w", err)
	}
	out := map[string]*QuerySet{}
	for _, e := range entries {
		data, err := builtinPairs.ReadFile("queries/" + e.Name())
		if err != nil {
			return nil, err
		}
		qs, err := ParseQuerySet(data)
		if err != nil {
			return nil, fmt.Errorf("built-in pair set %s: %w", e.Name(), err)
		}
		for _, c := range cs {
			if c.Version == qs.CorpusVersion {
				if err := errors.Join(qs.CheckTools(c.IDs()), qs.CheckPairs()); err != nil {
					return nil, fmt.Errorf("built-in pair set %s: %w", e.Name(), err)
				}
				out[c.Name] = qs
			}
		}
	}
	return out, nil
}

// CheckPairs reports a pair set whose pairs are not each one first and one
// later phrasing of the same tool.
func (qs *QuerySet) CheckPairs() error {
	type pair struct {
		first, later int
		tool         string
	}
	byID := map[string]*pair{}
	var order []string
	for _, q := range qs.Queries {
		if q.Pair == "" {
			return fmt.Errorf("query %s: no pair id (a pair set holds only pairs)", q.ID)
		}
		p := byID[q.Pair]
		if p == nil {
			p = &pair{}
			byID[q.Pair] = p
			order = append(order, q.Pair)
		}
		target := q.Labels[slices.IndexFunc(q.Labels, func(l Label) bool { return l.Relevance == 2 })].ToolID
		if p.tool != "" && p.tool != target {
			return fmt.Errorf("pair %s: its phrasings want different tools (%s, %s)", q.Pair, p.tool, target)
		}
		p.tool = target
		if q.Split == SplitFirst {
			p.first++
		} else {
			p.later++
		}
	}
	for _, id := range order {
		if p := byID[id]; p.first != 1 || p.later != 1 {
			return fmt.Errorf("pair %s: %d first and %d later phrasings, want one of each", id, p.first, p.later)
		}
	}
	return nil
}
