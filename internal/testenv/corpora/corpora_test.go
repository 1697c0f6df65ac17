package corpora

import (
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestCorpora reads both tool corpora and their query sets: ids are
// "server:tool" and unique, Metadata keeps the schema verbatim, and every
// graded label names a tool of its corpus.
func TestCorpora(t *testing.T) {
	for _, tc := range []struct {
		tools   []config.Tool
		queries string
	}{
		{LiveMCPTools(t), "livemcptool.queries.json"},
		{CorpusV2(t), "corpus_v2.queries.json"},
	} {
		ids := map[string]bool{}
		for _, x := range tc.tools {
			if x.ID != config.ToolID(x.Server, x.Name) || ids[x.ID] {
				t.Errorf("%s: tool %q: id not server:tool or repeated", tc.queries, x.ID)
			}
			ids[x.ID] = true
		}
		for i, m := range Metadata(tc.tools) {
			if x := tc.tools[i]; m.ID() != x.ID || m.Description != x.Description || m.ParamsJSON != string(x.Schema) {
				t.Errorf("Metadata of %s: got %+v, want the tool's fields and schema verbatim", x.ID, m)
			}
		}
		labels := 0
		for _, q := range testenv.Queries(t, tc.queries) {
			for _, l := range q.Labels {
				labels++
				if !ids[l.ToolID] {
					t.Errorf("%s: query %s labels %q, not a tool of the corpus", tc.queries, q.ID, l.ToolID)
				}
			}
		}
		if labels == 0 {
			t.Errorf("%s: got no labels", tc.queries)
		}
	}
}
