package bench

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/arms"
)

func TestFrozenCorpora(t *testing.T) {
	tests := []struct {
		name           string
		tools, servers int
		version        string
	}{
		{"corpus_v2", 45, 7, "corpus_v2@2026-07-14"},
		{"livemcptool", 527, 70, "livemcptool@ddea2d24"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := loadFrozen(t, tc.name)
			if len(c.Tools) != tc.tools || len(c.Servers()) != tc.servers || c.Version != tc.version {
				t.Fatalf("got %d tools, %d servers, version %q; want %d, %d, %q", len(c.Tools), len(c.Servers()), c.Version, tc.tools, tc.servers, tc.version)
			}
			if !sort.SliceIsSorted(c.Tools, func(i, j int) bool { return c.Tools[i].ID < c.Tools[j].ID }) {
				t.Error("tools are not sorted by id")
			}
			for _, tool := range c.Tools {
				if tool.ID != tool.Server+":"+tool.Name {
					t.Errorf("id %q does not join server %q and tool %q", tool.ID, tool.Server, tool.Name)
				}
				if len(tool.Schema) == 0 {
					continue
				}
				canon, err := arms.CanonicalJSON(tool.Schema)
				if err != nil || canon != string(tool.Schema) {
					t.Errorf("%s: schema not canonical (err %v)", tool.ID, err)
				}
			}
		})
	}
}

func TestParseCorpusRejects(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{"no tools", `{"version":"v","tools":[]}`, "no tools"},
		{"misspelt field", `{"tools":[{"server":"s","tool":"t","descripton":"x"}]}`, `unknown field "descripton"`},
		{"id mismatch", `{"tools":[{"server":"s","tool":"t","tool_id":"s:u"}]}`, `does not match`},
		{"missing tool", `{"tools":[{"server":"s"}]}`, "must both be set"},
		{"colon in server", `{"tools":[{"server":"a:b","tool":"t"}]}`, "cannot contain ':'"},
		{"two schemas", `{"tools":[{"server":"s","tool":"t","schema":{},"inputSchema":{}}]}`, "both schema and inputSchema"},
		{"duplicate", `{"tools":[{"server":"s","tool":"t"},{"server":"s","tool":"t"}]}`, `duplicate id "s:t"`},
		{"count mismatch", `{"tool_count":2,"tools":[{"server":"s","tool":"t"}]}`, "tool_count says 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCorpus("x", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseCorpusBothShapes(t *testing.T) {
	// corpus_v2 style (tool_id, schema) and LiveMCPTool style (inputSchema,
	// null description) load to the same canonical tool.
	a, err := ParseCorpus("a", []byte(`{"tools":[{"tool_id":"s:t","server":"s","tool":"t","description":"d","schema":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseCorpus("a", []byte(`{"tools":[{"server":"s","tool":"t","description":"d","inputSchema":{"properties":{"a":{"type":"number"},"b":{"type":"string"}},"type":"object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a.Tools, b.Tools); diff != "" {
		t.Errorf("the two shapes differ (-schema +inputSchema):\n%s", diff)
	}
	n, err := ParseCorpus("n", []byte(`{"tools":[{"server":"s","tool":"t","description":null,"inputSchema":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Tools[0]; got.Description != "" || got.Schema != nil {
		t.Errorf("null description and schema: got %+v, want empty", got)
	}
}

func TestWriteCorpusRoundTrip(t *testing.T) {
	c := loadFrozen(t, "corpus_v2")
	// Reverse the order: the writer sorts, and must not reorder its input.
	in := append(c.Tools[:0:0], c.Tools...)
	for i, j := 0, len(in)-1; i < j; i, j = i+1, j-1 {
		in[i], in[j] = in[j], in[i]
	}
	first := in[0].ID
	data, err := WriteCorpus("test@1", map[string]string{"generator": "test"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if in[0].ID != first {
		t.Errorf("WriteCorpus reordered its input: first is %s, want %s", in[0].ID, first)
	}
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCorpus(path, "")
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != "c" || back.Version != "test@1" {
		t.Errorf("got name %q version %q, want c, test@1", back.Name, back.Version)
	}
	if diff := cmp.Diff(c.Tools, back.Tools); diff != "" {
		t.Errorf("round trip changed the tools (-want +got):\n%s", diff)
	}
	again, err := WriteCorpus("test@1", map[string]string{"generator": "test"}, back.Tools)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Error("writing the loaded corpus again gave different bytes")
	}
}

func TestOpenDatasets(t *testing.T) {
	dir := t.TempDir()
	corpus, err := os.ReadFile(filepath.Join(repoDatasets(t), CorpusV2File))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CorpusV2File), corpus, 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == DatasetsEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name, flag, env, want string
	}{
		{"flag wins", dir, "/nonexistent", dir},
		{"env next", "", dir, dir},
		{"built in", "", "", "built in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds := OpenDatasets(tc.flag, env(tc.env))
			if ds.Where != tc.want {
				t.Fatalf("got %q, want %q", ds.Where, tc.want)
			}
			if _, err := ds.Corpus(CorpusV2File, "corpus_v2"); err != nil {
				t.Fatalf("loading corpus_v2: %v", err)
			}
		})
	}
	_, err = OpenDatasets(dir, env("")).ResultFixtures()
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("fixtures missing from a --datasets directory: got %v, want an error naming %s", err, dir)
	}
}

// TestBuiltInDatasets checks that the datasets built into the binary are
// bench/datasets byte for byte (TestFrozenCorpora checks their versions and
// tool counts), fixtures included.
func TestBuiltInDatasets(t *testing.T) {
	ds := OpenDatasets("", func(string) string { return "" })
	fx, err := ds.ResultFixtures()
	if err != nil {
		t.Fatal(err)
	}
	if fx.FixtureID != "result_fixtures_v1" || len(fx.Results) != 6 {
		t.Errorf("result fixtures: got %q with %d, want result_fixtures_v1 with 6", fx.FixtureID, len(fx.Results))
	}
	disk := os.DirFS(repoDatasets(t))
	n := 0
	err = fs.WalkDir(ds.fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		built, _ := fs.ReadFile(ds.fsys, path)
		onDisk, err := fs.ReadFile(disk, path)
		if err != nil || !bytes.Equal(built, onDisk) {
			t.Errorf("%s: the built-in copy differs from bench/datasets (%v)", path, err)
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Errorf("walked %d built-in files (%v), want 5: both corpora, the attribution, the fixtures and the fetch page", n, err)
	}
}
