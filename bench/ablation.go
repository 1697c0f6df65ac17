package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/index"
)

// AblationRow is one variant of the index scored on one corpus's query set.
type AblationRow struct {
	Variant string `json:"variant"`
	// Change says what the variant changes against "production".
	Change string `json:"change"`
	Corpus string `json:"corpus"`
	// Status is "measured" or "unavailable" (UnavailableReason says why).
	Status            string `json:"status"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	// Quality covers every query; QualityBySplit the tune and heldout halves.
	Quality        *Quality           `json:"quality,omitempty"`
	QualityBySplit map[string]Quality `json:"quality_by_split,omitempty"`
}

// variant is one index configuration of the ablation.
type variant struct {
	name, change string
	// features edits a copy of the production features.
	features func(*index.Features)
	// noExpand drops query expansion.
	noExpand bool
	// k1 and b, when non-zero, replace Bleve's BM25 parameters for the
	// variant. Bleve keeps them in package variables, so they are set
	// around the variant's searches and restored after; the profiler
	// searches from one goroutine.
	k1, b float64
	// unavailable, when set, makes the row a skipped one with this reason.
	unavailable string
	// dense, when set, ranks with dense retrieval (Profile.Dense).
	dense denseMode
	// arm, when set, names the arm whose index metadata the variant
	// ingests instead of the baseline's.
	arm string
}

// variants lists the ablation: production first, then one change at a
// time. Levers production uses are turned off; alternatives it does not use
// are turned on, so every row reads as "production, except ...". One row,
// "before issue 17", is the index mcproxy ran before it indexed full
// metadata, so that every report compares production with it in the same
// run (issue 17's acceptance).
func (p *Profile) variants() []variant {
	same := func(*index.Features) {}
	vs := []variant{
		{name: "production", change: "the index as mcproxy runs it", features: same},
		{name: "-expansion", change: "no query expansion", features: same, noExpand: true},
		{name: "expansion=grouped", change: "expansions searched inside their query word's clause", features: func(f *index.Features) { f.ExpansionGrouped = !f.ExpansionGrouped }},
		{name: "expansion-weight=0.5", change: "expansion weights halved", features: func(f *index.Features) { f.ExpansionWeight /= 2 }},
		{name: "expansion-weight=2", change: "expansion weights doubled", features: func(f *index.Features) { f.ExpansionWeight *= 2 }},
		{name: "-synonyms", change: "no synonym lexicon", features: func(f *index.Features) { f.Synonyms = false }},
		{name: "synonym-weight=0.5", change: "a synonym match weighs half the word's own match instead of as much", features: func(f *index.Features) { f.SynonymWeight = 0.5 }},
		{name: "synonym-weight=2", change: "a synonym match weighs twice the word's own match instead of as much", features: func(f *index.Features) { f.SynonymWeight = 2 }},
		{name: "-server-mention", change: "a query naming a server does not prefer it", features: func(f *index.Features) { f.ServerMention = false }},
		{name: "-exact-name", change: "an exact tool id or name in the query is not ranked first", features: func(f *index.Features) { f.ExactName = false }},
		{name: "-params", change: "parameter names and descriptions not indexed", features: func(f *index.Features) { f.Params = false }},
		{name: "param-descriptions=off", change: "parameter descriptions not indexed (names, titles and enum values are)", features: func(f *index.Features) { f.ParamDescriptions = index.ParamDescriptionsOff }},
		{name: "param-descriptions=params-field", change: "parameter descriptions in the params field only, not in the combined field", features: func(f *index.Features) { f.ParamDescriptions = index.ParamDescriptionsParamsField }},
		{name: "param-descriptions=everywhere", change: "parameter descriptions in the params field too, not only in the combined field", features: func(f *index.Features) { f.ParamDescriptions = index.ParamDescriptionsEverywhere }},
		{name: "-skip-sibling-names", change: "the names of a server's other tools in a tool's descriptions are indexed with it", features: func(f *index.Features) { f.SkipSiblingNames = false }},
		{name: "-split-identifiers", change: "read_text_file stays one word", features: func(f *index.Features) { f.SplitIdentifiers = false }},
		{name: "-cjk-bigrams", change: "CJK text indexed as single characters", features: func(f *index.Features) { f.CJKBigrams = false }},
		{name: "-stop-words", change: "English stop words kept", features: func(f *index.Features) { f.StopWords = false }},
		{name: "stemmer=porter", change: "Porter instead of Snowball stemming", features: func(f *index.Features) { f.Stemmer = "porter" }},
		{name: "stemmer=none", change: "no stemming", features: func(f *index.Features) { f.Stemmer = "none" }},
		{name: "fields=all", change: "search only the combined field", features: func(f *index.Features) {
			f.Fields = []index.FieldBoost{{Field: "all", Boost: 1}}
		}},
		{name: "fields+description", change: "also search the description field (boost 0.5)", features: func(f *index.Features) {
			f.Fields = append(f.Fields, index.FieldBoost{Field: "description", Boost: 0.5})
		}},
		{name: "name-boost=1", change: "name field boost 1 instead of 0.5", features: func(f *index.Features) { setBoost(f, "name", 1) }},
		{name: "params-boost=0.125", change: "params field boost 0.125 instead of 0.25", features: func(f *index.Features) { setBoost(f, "params", 0.125) }},
		{name: "params-boost=0.5", change: "params field boost 0.5 instead of 0.25", features: func(f *index.Features) { setBoost(f, "params", 0.5) }},
		{name: "-deprecated-demotion", change: "a tool its description marks deprecated is not ranked below the others", features: func(f *index.Features) { f.DeprecatedWeight = 1 }},
		{name: "+server-prior", change: "server prior 0.25: a tool gains with its server's coverage of the query", features: func(f *index.Features) { f.ServerPrior = 0.25 }},
		{name: "mention-weight=1", change: "server mention adds the best score instead of half of it", features: func(f *index.Features) { f.ServerMentionWeight = 1 }},
		{name: "bm25 k1=0.9 b=0.4", change: "BM25 k1 0.9, b 0.4 instead of 1.2, 0.75", features: same, k1: 0.9, b: 0.4},
		{name: "bm25 k1=2 b=0.75", change: "BM25 k1 2 instead of 1.2", features: same, k1: 2, b: 0.75},
		{name: "bm25 k1=1.2 b=0.9", change: "BM25 b 0.9 instead of 0.75", features: same, k1: 1.2, b: 0.9},
		{name: "before issue 17", change: "the index mcproxy ran before issue 17: compact_sig's metadata (no parameter descriptions), params boost 0.5, other tools' names kept", arm: arms.CompactName, features: func(f *index.Features) {
			f.ParamDescriptions, f.SkipSiblingNames = index.ParamDescriptionsEverywhere, false
			setBoost(f, "params", 0.5)
		}},
		{name: "+dense", change: "dense retrieval fused with BM25 (reciprocal rank fusion), as with an embeddings section in config.json", features: same, dense: denseFused},
		{name: "dense-only", change: "dense retrieval alone, no BM25", features: same, dense: denseOnly},
	}
	if p.Dense == nil {
		reason := p.DenseUnavailable
		if reason == "" {
			reason = "no embeddings provider configured"
		}
		for i := range vs {
			if vs[i].dense != 0 {
				vs[i].unavailable = reason
			}
		}
	} else {
		model := fmt.Sprintf(" (model %s)", p.Dense.Config.Embeddings.Model)
		for i := range vs {
			if vs[i].dense != 0 {
				vs[i].change += model
			}
		}
	}
	if p.Index.Expander == nil {
		reason := p.ExpandUnavailable
		if reason == "" {
			reason = "no query expansion configured"
		}
		vs[1] = variant{name: "-expansion", change: "no query expansion", unavailable: "production already runs without it here: " + reason}
	}
	return vs
}

func setBoost(f *index.Features, field string, boost float64) {
	for i := range f.Fields {
		if f.Fields[i].Field == field {
			f.Fields[i].Boost = boost
		}
	}
}

// ablate scores every variant on c with the baseline arm's index metadata
// (or the variant's own arm's).
func (p *Profile) ablate(ctx context.Context, c *Corpus, qs NamedQuerySet, progress io.Writer) ([]AblationRow, error) {
	baseline, err := p.Registry.Resolve(arms.BaselineName)
	if err != nil {
		return nil, err
	}
	base := index.DefaultFeatures()
	if p.Index.Features != nil {
		base = *p.Index.Features
	}
	var rows []AblationRow
	for _, v := range p.variants() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row := AblationRow{Variant: v.name, Change: v.change, Corpus: c.Name}
		if v.unavailable != "" {
			row.Status, row.UnavailableReason = StatusUnavailable, v.unavailable
			rows = append(rows, row)
			continue
		}
		fmt.Fprintf(progress, "bench: %s: ablation: %s\n", c.Name, v.name)
		a := baseline
		if v.arm != "" {
			if a, err = p.Registry.Resolve(v.arm); err != nil {
				return nil, fmt.Errorf("variant %s: %w", v.name, err)
			}
		}
		f := base
		f.Fields = append([]index.FieldBoost(nil), base.Fields...)
		v.features(&f)
		setup := rankingSetup{index: index.Options{Features: &f, Expander: p.Index.Expander, Synonyms: p.Index.Synonyms}}
		if v.noExpand {
			setup.index.Expander = nil
		}
		if v.dense != 0 {
			setup.dense, setup.denseOnly = p.Dense, v.dense == denseOnly
		}
		rq, err := measureWithBM25(ctx, a, c, qs, setup, v.k1, v.b)
		if err != nil && v.dense != 0 && ctx.Err() == nil {
			// A provider failing is a fact about this run, not a reason to
			// lose the rest of the report.
			row.Status, row.UnavailableReason = StatusUnavailable, "embeddings provider failed: "+err.Error()
			rows = append(rows, row)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.name, err)
		}
		row.Status = StatusMeasured
		row.Quality = &rq.all
		row.QualityBySplit = rq.bySplit
		rows = append(rows, row)
	}
	return rows, nil
}

// measureWithBM25 is measureRetrieval with Bleve's BM25 parameters set to
// k1 and b (when k1 is non-zero) for its duration.
func measureWithBM25(ctx context.Context, a arms.Arm, c *Corpus, qs NamedQuerySet, setup rankingSetup, k1, b float64) (scored, error) {
	if k1 != 0 {
		oldK1, oldB := search.BM25_k1, search.BM25_b
		search.BM25_k1, search.BM25_b = k1, b
		defer func() { search.BM25_k1, search.BM25_b = oldK1, oldB }()
	}
	return measureRetrieval(ctx, a, c, qs, setup)
}
