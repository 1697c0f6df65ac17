package embed

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcproxy/mcproxy/internal/index"
)

func h(id string) index.Hit { return index.Hit{ID: id, Server: "s", Name: id[2:], Score: 99} }

// The expected scores are worked out by hand from 1/(k+rank).
func TestFuse(t *testing.T) {
	tests := []struct {
		name           string
		lexical, dense []index.Hit
		k              int
		weight         float64
		want           []index.Hit
	}{
		{
			name:    "agreement wins, then rank",
			lexical: []index.Hit{h("s:a"), h("s:b"), h("s:c")},
			dense:   []index.Hit{h("s:b"), h("s:d")},
			k:       1, weight: 1,
			// a: 1/2; b: 1/3 + 1/2 = 5/6; c: 1/4; d: 1/3
			want: []index.Hit{
				{ID: "s:b", Server: "s", Name: "b", Score: 5.0 / 6},
				{ID: "s:a", Server: "s", Name: "a", Score: 0.5},
				{ID: "s:d", Server: "s", Name: "d", Score: 1.0 / 3},
				{ID: "s:c", Server: "s", Name: "c", Score: 0.25},
			},
		},
		{
			name:    "mirrored ranks tie, broken by ID",
			lexical: []index.Hit{h("s:y"), h("s:x")},
			dense:   []index.Hit{h("s:x"), h("s:y")},
			k:       60, weight: 1,
			// both 1/61 + 1/62
			want: []index.Hit{
				{ID: "s:x", Server: "s", Name: "x", Score: 1.0/61 + 1.0/62},
				{ID: "s:y", Server: "s", Name: "y", Score: 1.0/61 + 1.0/62},
			},
		},
		{
			name:    "default k and half dense weight",
			lexical: []index.Hit{h("s:a")},
			dense:   []index.Hit{h("s:b"), h("s:a")},
			k:       0, weight: 0.5,
			// a: 1/61 + 0.5/62; b: 0.5/61
			want: []index.Hit{
				{ID: "s:a", Server: "s", Name: "a", Score: 1.0/61 + 0.5/62},
				{ID: "s:b", Server: "s", Name: "b", Score: 0.5 / 61},
			},
		},
		{
			name:    "duplicate in one list counts once at its best rank",
			lexical: []index.Hit{h("s:a"), h("s:a"), h("s:b")},
			k:       10, weight: 1,
			// a: 1/11; b: 1/13 (rank 3: the duplicate still holds rank 2)
			want: []index.Hit{
				{ID: "s:a", Server: "s", Name: "a", Score: 1.0 / 11},
				{ID: "s:b", Server: "s", Name: "b", Score: 1.0 / 13},
			},
		},
		{
			name:    "a tool in both lists keeps its lexical hit's fields",
			lexical: []index.Hit{{ID: "s:a", Server: "s", Name: "a", Score: 7}},
			dense:   []index.Hit{{ID: "s:a", Server: "other", Name: "other", Score: 0.9}},
			k:       1, weight: 1,
			// a: 1/2 + 1/2
			want: []index.Hit{{ID: "s:a", Server: "s", Name: "a", Score: 1}},
		},
		{
			name:  "dense only",
			dense: []index.Hit{h("s:q")},
			k:     2, weight: 1,
			want: []index.Hit{{ID: "s:q", Server: "s", Name: "q", Score: 1.0 / 3}},
		},
		{
			name: "both empty",
			k:    60, weight: 1,
			want: []index.Hit{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lex, den := slices.Clone(tc.lexical), slices.Clone(tc.dense)
			got := FuseWeighted(tc.lexical, tc.dense, tc.k, tc.weight)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("FuseWeighted mismatch (-want +got):\n%s", diff)
			}
			if !cmp.Equal(lex, tc.lexical) || !cmp.Equal(den, tc.dense) {
				t.Errorf("FuseWeighted modified its inputs")
			}
			if tc.weight == 1 {
				if diff := cmp.Diff(got, Fuse(tc.lexical, tc.dense, tc.k)); diff != "" {
					t.Errorf("Fuse differs from FuseWeighted with weight 1 (-weighted +fuse):\n%s", diff)
				}
			}
		})
	}
}

func TestFuseDeterministic(t *testing.T) {
	var lex, den []index.Hit
	for _, id := range []string{"s:e", "s:d", "s:c", "s:b", "s:a"} {
		lex = append(lex, h(id))
	}
	for _, id := range []string{"s:a", "s:b", "s:c", "s:d", "s:e"} {
		den = append(den, h(id))
	}
	first := Fuse(lex, den, 60)
	for range 20 {
		if diff := cmp.Diff(first, Fuse(lex, den, 60)); diff != "" {
			t.Fatalf("second fusion differs (-first +again):\n%s", diff)
		}
	}
	// a/e, b/d tie pairwise; c sits in the middle of both lists.
	var ids []string
	for _, f := range first {
		ids = append(ids, f.ID)
	}
	want := []string{"s:a", "s:e", "s:b", "s:d", "s:c"}
	if !slices.Equal(ids, want) {
		t.Errorf("got order %v, want %v", ids, want)
	}
}
