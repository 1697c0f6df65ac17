package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testDatasets is the frozen dataset directory: $MCPROXY_DATASETS when set,
// else bench/datasets in the tree.
func testDatasets(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv(DatasetsEnv); dir != "" {
		return dir
	}
	return repoDatasets(t)
}

// repoDatasets is bench/datasets, the package's own copy.
func repoDatasets(t *testing.T) string {
	t.Helper()
	return filepath.Join(mustWD(t), "datasets")
}

func loadFrozen(t *testing.T, name string) *Corpus {
	t.Helper()
	files := map[string]string{"corpus_v2": CorpusV2File, "livemcptool": LiveMCPToolFile}
	c, err := LoadCorpus(filepath.Join(testDatasets(t), files[name]), name)
	if err != nil {
		t.Fatalf("loading %s: %v", name, err)
	}
	return c
}

// words normalizes an identifier or a sentence to lowercase words, splitting
// camelCase, snake_case, kebab-case and punctuation.
func words(s string) string {
	s = regexp.MustCompile(`([a-z0-9])([A-Z])`).ReplaceAllString(s, "$1 $2")
	s = regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(s, " ")
	return " " + strings.ToLower(strings.TrimSpace(s)) + " "
}

func TestBuiltinQuerySets(t *testing.T) {
	tests := []struct {
		file       string
		corpus     string
		minQueries int
		minServers int
	}{
		{"corpus_v2.queries.json", "corpus_v2", 90, 7},
		{"livemcptool.queries.json", "livemcptool", 70, 40},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			qs, err := LoadQuerySet(filepath.Join("queries", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c := loadFrozen(t, tc.corpus)
			if qs.CorpusVersion != c.Version {
				t.Errorf("corpus_version: got %q, want %q", qs.CorpusVersion, c.Version)
			}
			if err := qs.CheckTools(c.IDs()); err != nil {
				t.Errorf("labels name tools outside the corpus:\n%v", err)
			}
			if got := len(qs.Queries); got < tc.minQueries {
				t.Errorf("queries: got %d, want at least %d", got, tc.minQueries)
			}
			servers := map[string]bool{}
			texts := map[string]string{}
			for i, q := range qs.Queries {
				target := q.target()
				servers[strings.SplitN(target, ":", 2)[0]] = true
				// Alternating splits: tuning and held-back halves.
				want := SplitTune
				if i%2 == 1 {
					want = SplitHeldout
				}
				if q.Split != want {
					t.Errorf("%s: split %q, want %q (alternating)", q.ID, q.Split, want)
				}
				// A query paraphrases a need; it never names the tool.
				name := words(strings.SplitN(target, ":", 2)[1])
				if strings.Contains(words(q.Query), name) {
					t.Errorf("%s: %q names its tool %s", q.ID, q.Query, target)
				}
				if other, dup := texts[q.Query]; dup {
					t.Errorf("%s repeats the text of %s", q.ID, other)
				}
				texts[q.Query] = q.ID
			}
			if len(servers) < tc.minServers {
				t.Errorf("relevance-2 tools span %d servers, want at least %d", len(servers), tc.minServers)
			}
			if tc.corpus == "corpus_v2" {
				for _, s := range c.Servers() {
					if !servers[s] {
						t.Errorf("no query targets server %s", s)
					}
				}
			}
			if tune, held := len(qs.withSplit(SplitTune)), len(qs.withSplit(SplitHeldout)); tune == 0 || held == 0 || tune-held > 1 || held-tune > 1 {
				t.Errorf("split sizes tune=%d heldout=%d, want two halves", tune, held)
			}
		})
	}
}

func TestParseQuerySet(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{"valid without split", `{"corpus_version":"v","queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":2},{"tool_id":"s:u","relevance":1}]}]}`, ""},
		{"no queries", `{"corpus_version":"v","queries":[]}`, "no queries"},
		{"unknown field", `{"corpus_version":"v","queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevence":2}]}]}`, `unknown field "relevence"`},
		{"two targets", `{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":2},{"tool_id":"s:u","relevance":2}]}]}`, "2 labels with relevance 2"},
		{"no target", `{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":1}]}]}`, "0 labels with relevance 2"},
		{"grade out of range", `{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":3}]}]}`, "relevance 3 out of range"},
		{"tool graded twice", `{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":2},{"tool_id":"s:t","relevance":1}]}]}`, "graded twice"},
		{"bad split", `{"queries":[{"id":"a","query":"q","split":"train","labels":[{"tool_id":"s:t","relevance":2}]}]}`, `split "train"`},
		{"duplicate id", `{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":2}]},{"id":"a","query":"r","labels":[{"tool_id":"s:t","relevance":2}]}]}`, "duplicate id"},
		{"empty text", `{"queries":[{"id":"a","query":"","labels":[{"tool_id":"s:t","relevance":2}]}]}`, "empty query text"},
		{"not json", `{`, "decoding"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseQuerySet([]byte(tc.data))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckToolsReportsEveryUnknownTool(t *testing.T) {
	qs, err := ParseQuerySet([]byte(`{"queries":[{"id":"a","query":"q","labels":[{"tool_id":"s:t","relevance":2},{"tool_id":"s:gone","relevance":1}]},{"id":"b","query":"r","labels":[{"tool_id":"x:y","relevance":2}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	err = qs.CheckTools(map[string]bool{"s:t": true})
	if err == nil {
		t.Fatal("got no error, want two unknown tools")
	}
	for _, want := range []string{`query a: unknown tool "s:gone"`, `query b: unknown tool "x:y"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
