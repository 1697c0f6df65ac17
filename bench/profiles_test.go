package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// builtinCorpora loads both frozen corpora with their query sets.
func builtinCorpora(t *testing.T) ([]*Corpus, map[string]NamedQuerySet) {
	t.Helper()
	var cs []*Corpus
	for _, f := range []struct{ file, name string }{{CorpusV2File, "corpus_v2"}, {LiveMCPToolFile, "livemcptool"}} {
		c, err := LoadCorpus(filepath.Join(testDatasets(t), f.file), f.name)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	sets, err := AttachQuerySets(cs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs, sets
}

// Issue 31's acceptance asks that retrieval quality in a profile equal the
// full index restricted to the profile's tools, with the bench reporting
// both. The bench measures both on the built-in corpora: what a profile's
// endpoint serves (its front over the one index) and the full index
// restricted, on the same queries. They agree exactly, for a profile of
// every server and for a proper slice.
func TestProfileRetrievalReportsBoth(t *testing.T) {
	cs, sets := builtinCorpora(t)
	a, err := Registry().Resolve(config.DefaultArm)
	if err != nil {
		t.Fatal(err)
	}
	var rows []ProfileRow
	for _, c := range cs {
		all, ok, err := scoreProfile(context.Background(), a, c, sets[c.Name], rankingSetup{}, "every-server", config.ProfileConfig{Servers: c.Servers()})
		if err != nil || !ok {
			t.Fatalf("%s: every-server profile: %v %v", c.Name, ok, err)
		}
		if !all.Equal() || all.Served.Queries != len(sets[c.Name].Set.Queries) || all.Tools != len(c.Tools) {
			t.Errorf("%s: a profile of every server: own %+v, restricted %+v, %d of %d rankings identical; want the two the same over every query",
				c.Name, all.Served, all.Restricted, all.SameRankings, all.Served.Queries)
		}

		row, ok, err := measureProfile(context.Background(), a, c, sets[c.Name], rankingSetup{})
		if err != nil || !ok {
			t.Fatalf("%s: the built-in profile: %v %v", c.Name, ok, err)
		}
		t.Logf("%s %s (%d tools, %d queries): served %+v; restricted %+v; %d identical rankings", c.Name, row.Profile, row.Tools, row.Served.Queries, row.Served, row.Restricted, row.SameRankings)
		if row.Served.Queries == 0 || row.Served.Queries != row.Restricted.Queries || row.Tools == 0 || row.Tools >= len(c.Tools) {
			t.Errorf("%s: the profile holds %d of %d tools, %d and %d queries; want a proper slice scored on the same queries", c.Name, row.Tools, len(c.Tools), row.Served.Queries, row.Restricted.Queries)
		}
		if !row.Equal() {
			t.Errorf("%s: the built-in profile: served %+v, restricted %+v, %d of %d rankings identical; want the same rankings", c.Name, row.Served, row.Restricted, row.SameRankings, row.Served.Queries)
		}
		rows = append(rows, row)
	}
	md := (&Report{Profiles: rows}).Markdown()
	for _, want := range []string{"## Retrieval inside a profile", "| corpus_v2 | alternate-servers", "| livemcptool | alternate-servers", "| served |", "| full, restricted |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
}
