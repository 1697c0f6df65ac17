package expand

import (
	"context"
	"slices"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

// TestRelated checks document-side expansion's neighbors: words from the
// whole vectors file (not an index vocabulary), never an input term,
// sorted, bounded by the settings, and the same from the cache.
func TestRelated(t *testing.T) {
	r := NewRelated(vectors(t), RelatedOptions{})
	f := r.Func(3, 0.6)
	tests := []struct {
		terms []string
		want  string // a word that must be among the expansions
	}{
		{[]string{"weather"}, "rain"},
		{[]string{"stock"}, "market"},
		{[]string{"zone"}, "area"},
	}
	for _, tt := range tests {
		got := f(tt.terms)
		if !slices.Contains(got, tt.want) {
			t.Errorf("related(%v): got %v, want it to hold %q", tt.terms, got, tt.want)
		}
		if len(got) > 3 || !slices.IsSorted(got) || slices.Contains(got, tt.terms[0]) {
			t.Errorf("related(%v): got %v, want at most 3 sorted words without the term", tt.terms, got)
		}
		if again := f(tt.terms); !slices.Equal(again, got) {
			t.Errorf("related(%v) from the cache: got %v, want %v", tt.terms, again, got)
		}
	}
	// A very frequent word, an unknown one: nothing.
	if got := f([]string{"time", "xqzzv"}); len(got) != 0 {
		t.Errorf("related(time, xqzzv): got %v, want nothing", got)
	}
	// A stricter threshold keeps a subset.
	strict := r.Func(3, 0.8)([]string{"weather"})
	for _, w := range strict {
		if !slices.Contains(f([]string{"weather"}), w) {
			t.Errorf("related(weather) at 0.8: got %v, want a subset of the 0.6 answer", strict)
		}
	}
}

// TestRelatedFindsParaphrase checks the index end to end: with document-side
// expansion, a tool is found by a word it never uses; without it (the
// default), it is not.
func TestRelatedFindsParaphrase(t *testing.T) {
	tools := []config.ToolMetadata{
		{ServerName: "wx", Name: "current_conditions", Description: "Current weather for a city."},
		{ServerName: "wx", Name: "list_cities", Description: "List the supported cities."},
	}
	r := NewRelated(vectors(t), RelatedOptions{})
	for _, tt := range []struct {
		name  string
		boost float64
		want  []string
	}{
		{"off", 0, nil},
		{"on", 0.25, []string{"wx:current_conditions"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := index.DefaultFeatures()
			f.RelatedBoost = tt.boost
			ix, err := index.New(index.Options{Features: &f, Related: r.Func(3, 0.6)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ix.Close() })
			if err := ix.Upsert("wx", tools); err != nil {
				t.Fatal(err)
			}
			hits, err := ix.Search(context.Background(), "rain", 5)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("search rain: got %v, want %v", got, tt.want)
			}
		})
	}
}

// BenchmarkRelatedIndexBuild indexes the 527 LiveMCPTool tools without
// document-side expansion (the baseline), with it from a cold cache (every
// term's neighbors searched among the candidate words) and with a warm one.
func BenchmarkRelatedIndexBuild(b *testing.B) {
	tools := liveMCPTools(b)
	servers, groups := byServer(tools)
	v := vectors(b)
	build := func(b *testing.B, f index.Features, rel index.RelatedFunc) {
		ix, err := index.New(index.Options{Features: &f, Related: rel})
		if err != nil {
			b.Fatal(err)
		}
		defer ix.Close()
		for _, s := range servers {
			if err := ix.Upsert(s, groups[s]); err != nil {
				b.Fatal(err)
			}
		}
	}
	on := index.DefaultFeatures()
	on.RelatedBoost = 0.25
	b.Run("off", func(b *testing.B) {
		for b.Loop() {
			build(b, index.DefaultFeatures(), nil)
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			build(b, on, NewRelated(v, RelatedOptions{}).Func(3, 0.6))
		}
	})
	b.Run("warm", func(b *testing.B) {
		r := NewRelated(v, RelatedOptions{})
		build(b, on, r.Func(3, 0.6))
		for b.Loop() {
			build(b, on, r.Func(3, 0.6))
		}
	})
}

// BenchmarkRelatedSearch searches the 527 LiveMCPTool tools without
// document-side expansion (the baseline) and with it (one more term query
// per query word).
func BenchmarkRelatedSearch(b *testing.B) {
	tools := liveMCPTools(b)
	servers, groups := byServer(tools)
	r := NewRelated(vectors(b), RelatedOptions{})
	queries := []string{"will I need an umbrella tomorrow", "current share price of a company", "list the files in a folder", "translate this text into French"}
	on := index.DefaultFeatures()
	on.RelatedBoost = 0.25
	for _, c := range []struct {
		name string
		f    index.Features
	}{{"off", index.DefaultFeatures()}, {"on", on}} {
		b.Run(c.name, func(b *testing.B) {
			ix, err := index.New(index.Options{Features: &c.f, Related: r.Func(3, 0.6)})
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			for _, s := range servers {
				if err := ix.Upsert(s, groups[s]); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if _, err := ix.Search(ctx, queries[i%len(queries)], 10); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
