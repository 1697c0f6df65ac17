package index

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// repoRoot walks up from the test's directory to the one holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// datasetsDir is the frozen corpora directory: $MCPROXY_DATASETS, else
// ../shared/datasets relative to the repository root.
func datasetsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("MCPROXY_DATASETS"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(t), "..", "shared", "datasets")
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (set MCPROXY_DATASETS to the frozen corpora directory): %v", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}

// corpusV2 loads the 45 tools of corpus_v2.
func corpusV2(t testing.TB) []config.ToolMetadata {
	t.Helper()
	var f struct {
		Tools []struct {
			Server      string          `json:"server"`
			Tool        string          `json:"tool"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		} `json:"tools"`
	}
	readJSON(t, filepath.Join(datasetsDir(t), "corpus_v2.tools.json"), &f)
	out := make([]config.ToolMetadata, len(f.Tools))
	for i, x := range f.Tools {
		out[i] = config.ToolMetadata{Name: x.Tool, ServerName: x.Server, Description: x.Description, ParamsJSON: string(x.Schema)}
	}
	if len(out) != 45 {
		t.Fatalf("corpus_v2 has %d tools, want 45", len(out))
	}
	return out
}

// liveMCPTools loads the 527 tools of the LiveMCPTool snapshot.
func liveMCPTools(t testing.TB) []config.ToolMetadata {
	t.Helper()
	var f struct {
		Tools []struct {
			Server      string          `json:"server"`
			Tool        string          `json:"tool"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	readJSON(t, filepath.Join(datasetsDir(t), "livemcptool_snapshot", "tools.json"), &f)
	out := make([]config.ToolMetadata, len(f.Tools))
	for i, x := range f.Tools {
		params := ""
		if len(x.InputSchema) > 0 && string(x.InputSchema) != "null" {
			params = string(x.InputSchema)
		}
		out[i] = config.ToolMetadata{Name: x.Tool, ServerName: x.Server, Description: x.Description, ParamsJSON: params}
	}
	if len(out) != 527 {
		t.Fatalf("LiveMCPTool snapshot has %d tools, want 527", len(out))
	}
	return out
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
	Queries []struct {
		ID     string `json:"id"`
		Query  string `json:"query"`
		Split  string `json:"split"`
		Labels []struct {
			ToolID    string `json:"tool_id"`
			Relevance int    `json:"relevance"`
		} `json:"labels"`
	} `json:"queries"`
}

func loadQueries(t testing.TB, name string) querySet {
	t.Helper()
	var qs querySet
	readJSON(t, filepath.Join(repoRoot(t), "bench", "queries", name), &qs)
	return qs
}
