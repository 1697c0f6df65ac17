// Package corpora reads the frozen tool corpora (testenv.Datasets) as
// internal/config types, for the tests and benchmarks of retrieval: the
// 527 tools of the LiveMCPTool snapshot and the 45 of corpus_v2. Like
// testenv, it is imported only by _test.go files; it is a package of its
// own because internal/config's tests import testenv.
package corpora

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// LiveMCPTools returns the 527 tools of the LiveMCPTool snapshot in the
// frozen corpora, in the file's order.
func LiveMCPTools(t testing.TB) []config.Tool {
	t.Helper()
	return load(t, filepath.Join("livemcptool_snapshot", "tools.json"), 527)
}

// CorpusV2 returns the 45 tools of corpus_v2 in the frozen corpora, in the
// file's order.
func CorpusV2(t testing.TB) []config.Tool {
	t.Helper()
	return load(t, "corpus_v2.tools.json", 45)
}

// load reads the corpus file name (relative to testenv.Datasets), which
// must hold want tools. The two corpora name the schema differently.
func load(t testing.TB, name string, want int) []config.Tool {
	t.Helper()
	var f struct {
		Tools []struct {
			Server      string          `json:"server"`
			Tool        string          `json:"tool"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`      // corpus_v2
			InputSchema json.RawMessage `json:"inputSchema"` // LiveMCPTool
		} `json:"tools"`
	}
	read(t, name, &f)
	out := make([]config.Tool, len(f.Tools))
	for i, x := range f.Tools {
		schema := x.Schema
		if schema == nil {
			schema = x.InputSchema
		}
		if string(schema) == "null" {
			schema = nil
		}
		out[i] = config.Tool{ID: config.ToolID(x.Server, x.Tool), Server: x.Server, Name: x.Tool, Description: x.Description, Schema: schema}
	}
	if len(out) != want {
		t.Fatalf("corpora: %s has %d tools, want %d", name, len(out), want)
	}
	return out
}

// Metadata returns what the search index ingests for each tool: its
// schema's JSON verbatim as the parameter text (empty without a schema).
func Metadata(tools []config.Tool) []config.ToolMetadata {
	out := make([]config.ToolMetadata, len(tools))
	for i, x := range tools {
		out[i] = config.ToolMetadata{Name: x.Name, ServerName: x.Server, Description: x.Description, ParamsJSON: string(x.Schema)}
	}
	return out
}

// read decodes the JSON file at name, relative to Datasets.
func read(t testing.TB, name string, v any) {
	t.Helper()
	path := filepath.Join(testenv.Datasets(t), name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("corpora: reading %s (set %s to the frozen corpora directory): %v", path, testenv.DatasetsEnv, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("corpora: decoding %s: %v", path, err)
	}
}
