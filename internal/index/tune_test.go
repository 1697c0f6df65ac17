package index

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/search"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestTuneReport prints tune-half metrics and misses; a development aid run with
// MCPROXY_TUNE=1 (it asserts nothing, so it does not run otherwise).
func TestTuneReport(t *testing.T) {
	if os.Getenv("MCPROXY_TUNE") == "" {
		return
	}
	sets := []struct {
		name, file string
		load       func(testing.TB) []config.ToolMetadata
	}{{"cv2", "corpus_v2.queries.json", corpusV2}, {"lmt", "livemcptool.queries.json", liveMCPTools}}
	type variant struct {
		name string
		mod  func(*Features)
		k1b  [2]float64
	}
	vs := []variant{
		{name: "default", mod: func(*Features) {}},
		{name: "porter", mod: func(f *Features) { f.Stemmer = "porter" }},
		{name: "nostem", mod: func(f *Features) { f.Stemmer = "none" }},
		{name: "nostop", mod: func(f *Features) { f.StopWords = false }},
		{name: "nosplit", mod: func(f *Features) { f.SplitIdentifiers = false }},
		{name: "nocjk", mod: func(f *Features) { f.CJKBigrams = false }},
		{name: "noparams", mod: func(f *Features) { f.Params = false }},
		{name: "all", mod: func(f *Features) { f.Fields = []FieldBoost{{fieldAll, 1}} }},
		{name: "all+desc.5", mod: func(f *Features) { f.Fields = append(f.Fields, FieldBoost{fieldDescription, 0.5}) }},
		{name: "name1", mod: func(f *Features) { f.Fields[1].Boost = 1 }},
		{name: "name.25", mod: func(f *Features) { f.Fields[1].Boost = 0.25 }},
		{name: "params.25", mod: func(f *Features) { f.Fields[2].Boost = 0.25 }},
		{name: "nomention", mod: func(f *Features) { f.ServerMention = false }},
		{name: "mention.25", mod: func(f *Features) { f.ServerMentionWeight = 0.25 }},
		{name: "mention1", mod: func(f *Features) { f.ServerMentionWeight = 1 }},
		{name: "prior.1", mod: func(f *Features) { f.ServerPrior = 0.1 }},
		{name: "prior.25", mod: func(f *Features) { f.ServerPrior = 0.25 }},
		{name: "prior.5", mod: func(f *Features) { f.ServerPrior = 0.5 }},
		{name: "prior1", mod: func(f *Features) { f.ServerPrior = 1 }},
		{name: "noexact", mod: func(f *Features) { f.ExactName = false }},
		{name: "k1=0.9,b=0.4", mod: func(*Features) {}, k1b: [2]float64{0.9, 0.4}},
		{name: "k1=1.2,b=0.5", mod: func(*Features) {}, k1b: [2]float64{1.2, 0.5}},
		{name: "k1=1.2,b=0.9", mod: func(*Features) {}, k1b: [2]float64{1.2, 0.9}},
		{name: "k1=2,b=0.75", mod: func(*Features) {}, k1b: [2]float64{2, 0.75}},
		{name: "k1=0.6,b=0.75", mod: func(*Features) {}, k1b: [2]float64{0.6, 0.75}},
	}
	only := os.Getenv("MCPROXY_TUNE_ONLY")
	var out strings.Builder
	k1, b := search.BM25_k1, search.BM25_b
	defer func() { search.BM25_k1, search.BM25_b = k1, b }()
	for _, v := range vs {
		if only != "" && !strings.Contains(","+only+",", ","+v.name+",") {
			continue
		}
		search.BM25_k1, search.BM25_b = k1, b
		if v.k1b[0] != 0 {
			search.BM25_k1, search.BM25_b = v.k1b[0], v.k1b[1]
		}
		f := DefaultFeatures()
		v.mod(&f)
		fmt.Fprintf(&out, "%-14s", v.name)
		for _, s := range sets {
			ix := newIndex(t, Options{Features: &f})
			load(t, ix, s.load(t))
			qs := loadQueries(t, s.file)
			for _, split := range []string{"tune", "heldout"} {
				m := evaluate(t, ix, qs, split)
				if split == "tune" {
					fmt.Fprintf(&out, " | %s T hit %.3f mrr %.3f rec %.3f", s.name, m.hit5, m.mrr, m.recall5)
				} else {
					fmt.Fprintf(&out, " (H %.3f %.3f %.3f)", m.hit5, m.mrr, m.recall5)
				}
			}
			if os.Getenv("MCPROXY_TUNE") == "misses" {
				printMisses(t, &out, ix, qs)
			}
		}
		out.WriteString("\n")
	}
	t.Log("\n" + out.String())
}

func printMisses(t *testing.T, out *strings.Builder, ix *Index, qs querySet) {
	for _, q := range qs.Queries {
		if q.Split != "tune" {
			continue
		}
		hits, _ := ix.Search(context.Background(), q.Query, 5)
		want := ""
		for _, l := range q.Labels {
			if l.Relevance == 2 {
				want = l.ToolID
			}
		}
		found := false
		var top []string
		for _, h := range hits {
			top = append(top, h.ID)
			if h.ID == want {
				found = true
			}
		}
		if !found {
			fmt.Fprintf(out, "\n  MISS %s %q want %s got %v", q.ID, q.Query, want, top)
		}
	}
}

func TestTuneCoverage(t *testing.T) {
	if os.Getenv("MCPROXY_TUNE") == "" {
		return
	}
	var out strings.Builder
	for _, s := range []struct {
		file string
		load func(testing.TB) []config.ToolMetadata
	}{{"corpus_v2.queries.json", corpusV2}, {"livemcptool.queries.json", liveMCPTools}} {
		ix := newIndex(t, Options{})
		load(t, ix, s.load(t))
		for _, q := range loadQueries(t, s.file).Queries {
			if q.Split != "tune" {
				continue
			}
			hits, _ := ix.Search(context.Background(), q.Query, 5)
			want := ""
			for _, l := range q.Labels {
				if l.Relevance == 2 {
					want = l.ToolID
				}
			}
			in := false
			for _, h := range hits {
				in = in || h.ID == want
			}
			c := 0.0
			if len(hits) > 0 {
				c = hits[0].Coverage
			}
			fmt.Fprintf(&out, "%.2f %v %s\n", c, in, q.Query)
		}
	}
	t.Log("\n" + out.String())
}
