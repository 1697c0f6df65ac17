package expand

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/index"
)

// toySource has 3 dimensions and ranks from 1000 up, clear of MinRank.
// "folder" lies between "file" and "directory"; "fruit" and "banana" are
// elsewhere; "copy" and "clone" are identical, to test ties.
const toySource = `{"dimensions": 3, "l2NormIndex": 3, "wordIndex": 4, "vectors": {
 "file":      [1.0, 0.0, 0.0, 1, 1000],
 "directory": [0.8, 0.6, 0.0, 1, 1001],
 "folder":    [0.95, 0.31, 0.0, 1, 1002],
 "banana":    [0.0, 0.0, 1.0, 1, 1003],
 "fruit":     [0.0, 0.3, 0.95, 1, 1004],
 "copy":      [0.6, 0.8, 0.0, 1, 1005],
 "clone":     [0.6, 0.8, 0.0, 1, 1006],
 "even":      [0.9, 0.4, 0.0, 1, 10]
}}`

func toyVectors(t *testing.T) *Vectors {
	t.Helper()
	v, _, _ := convertString(t, toySource, ConvertOptions{})
	return v
}

func TestExpand(t *testing.T) {
	v := toyVectors(t)
	vocab := []string{"file", "directori", "banana", "copi", "clone", "even"}
	round := cmpopts.EquateApprox(0, 0.02)
	tests := []struct {
		name  string
		opts  Options
		terms []string
		want  []WeightedTerm
	}{
		{
			name:  "unknown word expands to its nearest index terms",
			opts:  Options{Neighbors: 2},
			terms: []string{"folder"},
			want:  []WeightedTerm{{"file", 0.95, "folder"}, {"directori", 0.95, "folder"}},
		},
		{
			name:  "one neighbor by default",
			terms: []string{"folder"},
			want:  []WeightedTerm{{"file", 0.95, "folder"}},
		},
		{
			name:  "similarity floor",
			opts:  Options{MinSimilarity: 0.96},
			terms: []string{"folder"},
			want:  []WeightedTerm{},
		},
		{
			name:  "weights scale with UnknownWeight",
			opts:  Options{UnknownWeight: 0.5},
			terms: []string{"fruit"},
			want:  []WeightedTerm{{"banana", 0.475, "fruit"}},
		},
		{
			name:  "known words are not expanded by default",
			terms: []string{"file", "banana"},
			want:  []WeightedTerm{},
		},
		{
			name:  "known words expand with KnownWeight",
			opts:  Options{KnownWeight: 0.1},
			terms: []string{"banana"},
			want:  []WeightedTerm{},
		},
		{
			name:  "query terms are never expansions",
			opts:  Options{Neighbors: 2},
			terms: []string{"folder", "file"},
			// clone and copi tie; the cut at Neighbors keeps the first by term.
			want: []WeightedTerm{{"directori", 0.95, "folder"}, {"clone", 0.82, "folder"}},
		},
		{
			name:  "frequent words are never expansions",
			opts:  Options{Neighbors: 10},
			terms: []string{"folder"},
			want:  []WeightedTerm{{"file", 0.95, "folder"}, {"directori", 0.95, "folder"}, {"clone", 0.82, "folder"}, {"copi", 0.82, "folder"}},
		},
		{
			name:  "frequent words are allowed with MinRank -1",
			opts:  Options{Neighbors: 10, MinRank: -1},
			terms: []string{"folder"},
			want:  []WeightedTerm{{"even", 0.95, "folder"}, {"file", 0.95, "folder"}, {"directori", 0.95, "folder"}, {"clone", 0.82, "folder"}, {"copi", 0.82, "folder"}},
		},
		{
			name:  "negative UnknownWeight expands nothing",
			opts:  Options{UnknownWeight: -1},
			terms: []string{"folder"},
			want:  []WeightedTerm{},
		},
		{
			name:  "words without vectors expand to nothing",
			terms: []string{"xyzzy", "42"},
			want:  []WeightedTerm{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(v, vocab, tc.opts)
			got := e.Expand(tc.terms, nil)
			if diff := cmp.Diff(tc.want, got, round, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Expand(%q) mismatch (-want +got):\n%s", tc.terms, diff)
			}
			for _, w := range got {
				if w.Weight <= 0 || w.Weight >= 1 {
					t.Errorf("got weight %v for %q, want within (0, 1)", w.Weight, w.Term)
				}
			}
		})
	}
}

// TestExpandWeightCap checks that a word with the very same vector still
// weighs less than a literal query word.
func TestExpandWeightCap(t *testing.T) {
	v := toyVectors(t)
	got := New(v, []string{"clone"}, Options{UnknownWeight: 3}).Expand([]string{"copi"}, nil)
	want := []WeightedTerm{{"clone", maxWeight, "copi"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestExpandTies checks that equal weights are ordered by term: "clone"
// and "copi" have the same vector.
func TestExpandTies(t *testing.T) {
	v := toyVectors(t)
	for _, vocab := range [][]string{{"clone", "copi"}, {"copi", "clone"}} {
		got := New(v, vocab, Options{Neighbors: 2}).Expand([]string{"directori"}, func(s string) bool { return s != "directori" })
		want := []WeightedTerm{{"clone", 0.96, "directori"}, {"copi", 0.96, "directori"}}
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 0.02)); diff != "" {
			t.Errorf("vocab %q: mismatch (-want +got):\n%s", vocab, diff)
		}
	}
}

// TestExpandInIndex checks that the index's live vocabulary decides which
// query words are known and which expansions remain.
func TestExpandInIndex(t *testing.T) {
	v := toyVectors(t)
	e := New(v, []string{"file", "directori"}, Options{})
	live := map[string]bool{"directori": true, "folder": true}
	got := e.Expand([]string{"folder"}, func(s string) bool { return live[s] })
	if len(got) != 0 {
		t.Errorf("got %v, want nothing: folder is known to the live index", got)
	}
	live = map[string]bool{"directori": true}
	got = e.Expand([]string{"folder"}, func(s string) bool { return live[s] })
	want := []WeightedTerm{{"directori", 0.95, "folder"}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 0.02)); diff != "" {
		t.Errorf("file left the index: mismatch (-want +got):\n%s", diff)
	}
}

func TestNewDoesNotModifyVocab(t *testing.T) {
	v := toyVectors(t)
	vocab := []string{"file", "banana", "directori", "file"}
	orig := slices.Clone(vocab)
	e := New(v, vocab, Options{})
	if !slices.Equal(vocab, orig) {
		t.Errorf("got vocab %q after New, want %q untouched", vocab, orig)
	}
	if got, want := e.Len(), 3; got != want {
		t.Errorf("got %d expandable terms, want %d", got, want)
	}
}

func TestExpandConcurrent(t *testing.T) {
	v := toyVectors(t)
	e := New(v, []string{"file", "directori", "banana"}, Options{})
	want := e.Expand([]string{"folder", "fruit"}, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if got := e.Expand([]string{"folder", "fruit"}, nil); !cmp.Equal(got, want) {
					errs <- fmt.Sprintf("got %v, want %v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRealNeighbors checks the converted package on pairs a paraphrased
// query needs (rain → weather, share → stock, inbox → email, lodging →
// hotel), against an index vocabulary holding distractors.
func TestRealNeighbors(t *testing.T) {
	v := vectors(t)
	vocab := []string{"directori", "file", "weather", "price", "stock", "hotel", "email", "password", "calendar", "search", "translat", "repositori"}
	e := New(v, vocab, Options{})
	tests := []struct {
		word string
		want string
	}{
		{"rain", "weather"},
		{"share", "stock"},
		{"inbox", "email"},
		{"lodg", "hotel"},
		{"folder", "directori"},
	}
	for _, tc := range tests {
		got := e.Expand([]string{tc.word}, nil)
		if len(got) == 0 || got[0].Term != tc.want {
			t.Errorf("Expand(%q): got %v, want %q first", tc.word, got, tc.want)
		}
	}
}

// TestTermsMatchIndexAnalysis checks that the converted file's keys are the
// terms the production index makes of the same words: every word of a
// tool description, analyzed by this package, is in the index vocabulary.
func TestTermsMatchIndexAnalysis(t *testing.T) {
	words := []string{"Running", "files", "directories", "searched", "weather", "forecasts", "happily",
		"generously", "organization", "universities", "caught", "messages", "running's", "Émigré"}
	desc := fmt.Sprint(words)
	ix, err := index.New(index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if err := ix.Upsert("s", []config.ToolMetadata{{Name: "t", ServerName: "s", Description: desc}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(context.Background(), "weather", 1); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]bool{}
	for _, w := range ix.Vocabulary() {
		vocab[w] = true
	}
	a, err := wordAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		term, ok := termOf(a, w)
		if w == "running's" {
			if ok {
				t.Errorf("termOf(%q) = %q, want it rejected (not a plain word)", w, term)
			}
			continue
		}
		if !ok || !vocab[term] {
			t.Errorf("termOf(%q) = %q, %v; want a term of the index vocabulary %v", w, term, ok, ix.Vocabulary())
		}
	}
}
