package index

import (
	"fmt"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
	"github.com/mcproxy/mcproxy/internal/testenv/corpora"
)

// corpusV2 loads the 45 tools of corpus_v2.
func corpusV2(t testing.TB) []config.ToolMetadata {
	t.Helper()
	return corpora.Metadata(corpora.CorpusV2(t))
}

// liveMCPTools loads the 527 tools of the LiveMCPTool snapshot.
func liveMCPTools(t testing.TB) []config.ToolMetadata {
	t.Helper()
	return corpora.Metadata(corpora.LiveMCPTools(t))
}

// synthesize returns n tools derived deterministically from base: copy k of
// tool i lives on server "<server>-<k>" and has its name and description
// varied, so the vocabulary and posting lists grow as a real large
// installation's would rather than repeating identical documents.
func synthesize(base []config.ToolMetadata, n int) []config.ToolMetadata {
	out := make([]config.ToolMetadata, 0, n)
	for k := 0; len(out) < n; k++ {
		for _, b := range base {
			if len(out) == n {
				break
			}
			t := b
			if k > 0 {
				t.ServerName = fmt.Sprintf("%s-%d", b.ServerName, k)
				t.Name = fmt.Sprintf("%s_v%d", b.Name, k)
				t.Description = fmt.Sprintf("%s (variant %d, region r%d, edition e%d)", b.Description, k, k%7, k%13)
			}
			out = append(out, t)
		}
	}
	return out
}

// byServer groups tools by server, in order of first appearance.
func byServer(tools []config.ToolMetadata) (servers []string, groups map[string][]config.ToolMetadata) {
	groups = map[string][]config.ToolMetadata{}
	for _, t := range tools {
		if _, ok := groups[t.ServerName]; !ok {
			servers = append(servers, t.ServerName)
		}
		groups[t.ServerName] = append(groups[t.ServerName], t)
	}
	return servers, groups
}

// load indexes tools into ix, one Upsert per server.
func load(t testing.TB, ix *Index, tools []config.ToolMetadata) {
	t.Helper()
	servers, groups := byServer(tools)
	for _, s := range servers {
		if err := ix.Upsert(s, groups[s]); err != nil {
			t.Fatal(err)
		}
	}
}

type querySet struct {
	Queries []testenv.Query
}

func loadQueries(t testing.TB, name string) querySet {
	t.Helper()
	return querySet{Queries: testenv.Queries(t, name)}
}
