package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

// Profile is one profiler run's inputs. Everything it reads is already in
// memory, so a run is a pure function of these values (and of the code).
// Corpora, Registry and Counter are required.
type Profile struct {
	// Corpora are measured in order.
	Corpora []*Corpus
	// QuerySets maps a corpus name to its graded queries; a corpus without
	// one gets token figures only.
	QuerySets map[string]NamedQuerySet
	// Arms are the arm names to measure, in report order. baseline_json is
	// always measured first, whether listed or not.
	Arms []string
	// Registry resolves arm names; an unavailable arm becomes a skipped row.
	Registry *arms.Registry
	// Counter counts tokens; TokenizerName is what the report calls it.
	Counter       arms.TokenCounter
	TokenizerName string
	// Fixtures, when set, adds the toon_results rows.
	Fixtures *arms.ResultFixtureSet
	// Front builds mcproxy's MCP front for the discovery measurement; nil
	// skips it (with a note in the report).
	Front FrontFactory
	// Progress receives one line per step; nil discards.
	Progress io.Writer
	// Index configures every index the run builds (features, query
	// expansion); its Dir must be empty. The zero value is the production
	// default without query expansion.
	Index index.Options
	// ExpandUnavailable says why Index.Expander is nil, for the report
	// ("" when it is set).
	ExpandUnavailable string
	// Ablation adds the retrieval ablation: every lever of the index turned
	// off or changed one at a time, scored on both halves of each query set
	// (see ablation.go).
	Ablation bool
	// Dense, when set, is the embeddings provider of the ablation's dense
	// rows; DenseUnavailable says why it is nil.
	Dense            *DenseSetup
	DenseUnavailable string
	// Learn maps a corpus name to its pair set: the run adds the learning
	// simulation (SimulateLearning), clean and with LearnNoise.
	Learn map[string]*QuerySet
}

// LearnNoise is the share of wrong episodes of the noisy learning run.
const LearnNoise = 0.2

// NamedQuerySet is a query set and the name the report gives it.
type NamedQuerySet struct {
	Name string
	Set  *QuerySet
}

// missDepth is the rank within which a query's relevance-2 tool must be
// found; the others are listed as misses.
const missDepth = 5

// Run measures every arm on every corpus and assembles the report. The
// report's GeneratedAt is left empty for the caller to stamp.
func (p *Profile) Run(ctx context.Context) (*Report, error) {
	progress := p.Progress
	if progress == nil {
		progress = io.Discard
	}
	names := armOrder(p.Arms)
	rep := &Report{SchemaVersion: SchemaVersion, Tokenizer: p.TokenizerName, QueryExpansion: "on", UserSynonymGroups: len(p.Index.Synonyms)}
	if p.Index.Expander == nil {
		rep.QueryExpansion = "off"
		if p.ExpandUnavailable != "" {
			rep.QueryExpansion += ": " + p.ExpandUnavailable
		}
	}
	for _, c := range p.Corpora {
		qs, hasQueries := p.QuerySets[c.Name]
		info := CorpusInfo{Name: c.Name, Version: c.Version, Tools: len(c.Tools), Servers: len(c.Servers())}
		if hasQueries {
			info.QuerySet = qs.Name
			info.Queries = len(qs.Set.Queries)
			info.TuneQueries = len(qs.Set.withSplit(SplitTune))
			info.HeldoutQueries = len(qs.Set.withSplit(SplitHeldout))
		}
		rep.Corpora = append(rep.Corpora, info)

		var listingArms []arms.Arm
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fmt.Fprintf(progress, "bench: %s: %s: tokens\n", c.Name, name)
			a, err := p.Registry.Resolve(name)
			if err != nil {
				if !errors.Is(err, arms.ErrArmUnavailable) {
					return nil, err
				}
				fmt.Fprintf(progress, "bench: %s: %s: skipped: %v\n", c.Name, name, err)
				rep.Arms = append(rep.Arms, ArmRow{Name: name, Corpus: c.Name, Status: StatusUnavailable, UnavailableReason: err.Error()})
				continue
			}
			res, err := arms.Measure(a, p.Counter, c.Tools)
			if err != nil {
				return nil, fmt.Errorf("corpus %s: %w", c.Name, err)
			}
			row := armRow(c.Name, res)
			if hasQueries && (a.IndexAltering() || name == arms.BaselineName) {
				fmt.Fprintf(progress, "bench: %s: %s: retrieval quality over %d queries\n", c.Name, name, len(qs.Set.Queries))
				rq, err := measureRetrieval(ctx, a, c, qs, rankingSetup{index: p.Index})
				if err != nil {
					return nil, fmt.Errorf("corpus %s: arm %s: %w", c.Name, name, err)
				}
				row.Quality = &rq.all
				row.QualityBySplit = rq.bySplit
				row.MissesAt5 = rq.misses
				row.IndexSkipped = rq.skipped
			}
			rep.Arms = append(rep.Arms, row)
			listingArms = append(listingArms, a)
		}

		if hasQueries {
			if a := defaultArm(listingArms); a != nil {
				fmt.Fprintf(progress, "bench: %s: %s: retrieval inside a profile\n", c.Name, a.Name())
				row, ok, err := measureProfile(ctx, a, c, qs, rankingSetup{index: p.Index})
				if err != nil {
					return nil, fmt.Errorf("corpus %s: %w", c.Name, err)
				}
				if ok {
					rep.Profiles = append(rep.Profiles, row)
				}
			}
		}

		if p.Ablation && hasQueries {
			rows, err := p.ablate(ctx, c, qs, progress)
			if err != nil {
				return nil, fmt.Errorf("corpus %s: ablation: %w", c.Name, err)
			}
			rep.Ablation = append(rep.Ablation, rows...)
		}

		switch {
		case !hasQueries:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: no query set with corpus_version %q, so retrieval quality and discovery cost were not measured (pass --queries)", c.Name, c.Version))
		case p.Front == nil:
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: discovery cost not measured (no MCP front; --no-discovery)", c.Name))
		default:
			for _, a := range listingArms {
				fmt.Fprintf(progress, "bench: %s: %s: retrieve_tools answers\n", c.Name, a.Name())
				d, err := measureDiscovery(ctx, p.Front, rankingSetup{index: p.Index}, p.Counter, a, c, qs.Set.Queries)
				if err != nil {
					return nil, fmt.Errorf("corpus %s: discovery under %s: %w", c.Name, a.Name(), err)
				}
				rep.Discovery = append(rep.Discovery, d)
			}
			if a := defaultArm(listingArms); a != nil {
				fmt.Fprintf(progress, "bench: %s: %s: session costs (noa)\n", c.Name, a.Name())
				srow, err := measureSession(ctx, p.Front, rankingSetup{index: p.Index}, p.Counter, a, c)
				if err != nil {
					return nil, fmt.Errorf("corpus %s: session costs under %s: %w", c.Name, a.Name(), err)
				}
				rep.Sessions = append(rep.Sessions, srow)
			}
		}
	}
	for _, c := range p.Corpora {
		pairs := p.Learn[c.Name]
		if pairs == nil {
			continue
		}
		var standard *QuerySet
		if qs, ok := p.QuerySets[c.Name]; ok {
			standard = qs.Set
		}
		for _, noise := range []float64{0, LearnNoise} {
			fmt.Fprintf(progress, "bench: %s: learning from use, %.0f%% noise\n", c.Name, noise*100)
			r, err := SimulateLearning(ctx, c, pairs, standard, noise, p.Index)
			if err != nil {
				return nil, fmt.Errorf("corpus %s: learning: %w", c.Name, err)
			}
			rep.Learning = append(rep.Learning, r)
		}
	}
	if p.Fixtures != nil {
		fmt.Fprintf(progress, "bench: %s: toon_results\n", p.Fixtures.FixtureID)
		tr, err := arms.RunToonResults(p.Counter, p.Fixtures)
		if err != nil {
			return nil, fmt.Errorf("toon_results: %w", err)
		}
		rep.ToonResults = toonResultsReport(p.Fixtures.FixtureID, tr)
	}
	return rep, nil
}

// defaultArm is mcproxy's default listing arm (config.DefaultArm) among
// as, else the first of them; nil when as is empty.
func defaultArm(as []arms.Arm) arms.Arm {
	for _, a := range as {
		if a.Name() == config.DefaultArm {
			return a
		}
	}
	if len(as) == 0 {
		return nil
	}
	return as[0]
}

// armOrder puts baseline_json first (every saving divides by it) and drops
// repeats, keeping the caller's order otherwise.
func armOrder(names []string) []string {
	out := []string{arms.BaselineName}
	seen := map[string]bool{arms.BaselineName: true}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func armRow(corpus string, r arms.Result) ArmRow {
	row := ArmRow{
		Name:                  r.Name,
		Corpus:                corpus,
		Status:                StatusMeasured,
		IndexAltering:         r.IndexAltering,
		LowerBound:            r.LowerBound,
		Tools:                 r.Items,
		TotalTokens:           r.TotalTokens,
		MeanTokens:            round2(r.MeanTokens),
		P95Tokens:             r.P95Tokens,
		ListingTokens:         r.ListingTokens,
		BaselineTotalTokens:   r.BaselineTokens,
		BaselineListingTokens: r.BaselineListingTokens,
		SavingsPct:            round2(r.SavingsPct),
		ListingSavingsPct:     round2(r.ListingSavingsPct),
	}
	for _, s := range r.Skipped {
		row.Skipped = append(row.Skipped, SkippedTool{ToolID: s.ID, Reason: s.Reason})
	}
	for _, h := range r.Heaviest {
		row.Heaviest = append(row.Heaviest, ToolTokens{ToolID: h.ID, Tokens: h.Tokens})
	}
	return row
}

// scored is one ranking setup scored on a query set.
type scored struct {
	all     Quality
	bySplit map[string]Quality
	misses  []Miss
	skipped []SkippedTool
}

// measureRetrieval scores c's queries on the production ranking under
// setup, its index fed each tool's metadata under arm a.
func measureRetrieval(ctx context.Context, a arms.Arm, c *Corpus, qs NamedQuerySet, setup rankingSetup) (scored, error) {
	p, err := setup.pipeline()
	if err != nil {
		return scored{}, err
	}
	defer p.Close()
	skipped, err := ingest(ctx, p, a, c.Tools)
	if err != nil {
		return scored{}, err
	}
	queries := qs.Set.Queries
	// The whole corpus as the limit gives a complete ranking for MAP; its
	// start is what retrieve_tools returns at a smaller limit.
	rankings, err := rankAll(ctx, p, queries, len(c.Tools))
	if err != nil {
		return scored{}, err
	}
	r := scoreRankings(queries, rankings)
	r.skipped = skipped
	return r, nil
}

// scoreRankings scores each query's ranking (rankings[i] for queries[i]):
// over all queries, per split, and the misses.
func scoreRankings(queries []Query, rankings [][]string) scored {
	r := scored{all: Score(queries, rankings), bySplit: map[string]Quality{}}
	for _, split := range []string{SplitTune, SplitHeldout} {
		var sq []Query
		var sr [][]string
		for i, q := range queries {
			if q.Split == split {
				sq = append(sq, q)
				sr = append(sr, rankings[i])
			}
		}
		if len(sq) > 0 {
			r.bySplit[split] = Score(sq, sr)
		}
	}
	if len(r.bySplit) == 0 {
		r.bySplit = nil
	}
	for i, q := range queries {
		rank := rankOf(rankings[i], q.target())
		if rank >= 1 && rank <= missDepth {
			continue
		}
		top := rankings[i]
		if len(top) > missDepth {
			top = top[:missDepth]
		}
		r.misses = append(r.misses, Miss{QueryID: q.ID, Query: q.Query, Split: q.Split, Want: q.target(), Rank: rank, Top: append([]string{}, top...)})
	}
	return r
}

// percentiles summarises answer sizes: nearest-rank p50 and p95, max, mean.
func percentiles(values []int) Spread {
	if len(values) == 0 {
		return Spread{}
	}
	sum := 0
	m := 0
	for _, v := range values {
		sum += v
		if v > m {
			m = v
		}
	}
	return Spread{P50: arms.Percentile(values, 50), P95: arms.Percentile(values, 95), Max: m, Mean: round2(float64(sum) / float64(len(values)))}
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
