package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/config"
)

// Corpus is a frozen set of tool definitions under measurement. Tools are
// sorted by ID and every schema is in canonical JSON (arms.CanonicalJSON), so
// the same corpus always yields the same bytes downstream.
type Corpus struct {
	// Name is the short name the report uses (corpus_v2, livemcptool, or the
	// file's base name without extension).
	Name string
	// Version is the file's own version stamp ("" when it has none).
	Version string
	// Tools are the corpus tools, sorted by ID.
	Tools []config.Tool
}

// Servers returns the distinct server names of the corpus, sorted.
func (c *Corpus) Servers() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range c.Tools {
		if !seen[t.Server] {
			seen[t.Server] = true
			out = append(out, t.Server)
		}
	}
	sort.Strings(out)
	return out
}

// IDs returns the set of tool ids of the corpus.
func (c *Corpus) IDs() map[string]bool {
	ids := make(map[string]bool, len(c.Tools))
	for _, t := range c.Tools {
		ids[t.ID] = true
	}
	return ids
}

// corpusFile is the on-disk shape shared by corpus_v2, the LiveMCPTool
// snapshot and captured corpora. Extra top-level provenance fields are
// ignored; tool_count, when present, must match.
type corpusFile struct {
	Version   string            `json:"version"`
	ToolCount *int              `json:"tool_count"`
	Tools     []json.RawMessage `json:"tools"`
}

// corpusTool is one tool record. corpus_v2 and captures carry tool_id and
// schema; the LiveMCPTool snapshot has inputSchema and no tool_id. The field
// order is sorted so a capture writes keys in the same order as the frozen
// corpora.
type corpusTool struct {
	Description *string         `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	ToolID      string          `json:"tool_id,omitempty"`
}

// LoadCorpus reads a corpus file; name is what the report calls it ("" =
// the file's base name without extension).
func LoadCorpus(path, name string) (*Corpus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		name = strings.TrimSuffix(name, ".tools")
	}
	c, err := ParseCorpus(name, data)
	if err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	return c, nil
}

// ParseCorpus decodes and validates a corpus. Each tool record is decoded
// strictly (a misspelt field is an error, not an empty description); ids must
// be unique and, when given, equal "server:tool"; schemas are canonicalized.
func ParseCorpus(name string, data []byte) (*Corpus, error) {
	var f corpusFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if len(f.Tools) == 0 {
		return nil, errors.New(`no tools (want {"version": ..., "tools": [...]})`)
	}
	if f.ToolCount != nil && *f.ToolCount != len(f.Tools) {
		return nil, fmt.Errorf("tool_count says %d, file holds %d tools", *f.ToolCount, len(f.Tools))
	}
	c := &Corpus{Name: name, Version: f.Version, Tools: make([]config.Tool, 0, len(f.Tools))}
	seen := make(map[string]int, len(f.Tools))
	for i, raw := range f.Tools {
		t, err := parseCorpusTool(raw)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if j, dup := seen[t.ID]; dup {
			return nil, fmt.Errorf("tools[%d]: duplicate id %q (first at tools[%d])", i, t.ID, j)
		}
		seen[t.ID] = i
		c.Tools = append(c.Tools, t)
	}
	sort.Slice(c.Tools, func(i, j int) bool { return c.Tools[i].ID < c.Tools[j].ID })
	return c, nil
}

func parseCorpusTool(raw json.RawMessage) (config.Tool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var rt corpusTool
	if err := dec.Decode(&rt); err != nil {
		return config.Tool{}, fmt.Errorf("decoding tool: %w", err)
	}
	if rt.Server == "" || rt.Tool == "" {
		return config.Tool{}, fmt.Errorf("tool %q: server and tool must both be set", rt.ToolID)
	}
	if strings.Contains(rt.Server, ":") {
		return config.Tool{}, fmt.Errorf("server %q: a server name cannot contain ':'", rt.Server)
	}
	id := config.ToolID(rt.Server, rt.Tool)
	if rt.ToolID != "" && rt.ToolID != id {
		return config.Tool{}, fmt.Errorf("tool_id %q does not match server %q and tool %q (want %q)", rt.ToolID, rt.Server, rt.Tool, id)
	}
	if len(rt.Schema) > 0 && len(rt.InputSchema) > 0 {
		return config.Tool{}, fmt.Errorf("tool %s: has both schema and inputSchema", id)
	}
	schema := rt.Schema
	if len(schema) == 0 {
		schema = rt.InputSchema
	}
	t := config.Tool{ID: id, Server: rt.Server, Name: rt.Tool}
	if rt.Description != nil {
		t.Description = *rt.Description
	}
	if s := bytes.TrimSpace(schema); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
		canon, err := arms.CanonicalJSON(s)
		if err != nil {
			return config.Tool{}, fmt.Errorf("tool %s: schema: %w", id, err)
		}
		t.Schema = json.RawMessage(canon)
	}
	return t, nil
}

// WriteCorpus encodes tools in the canonical corpus form: the records sorted
// by id with sorted keys, schemas in canonical JSON, indented for diffs.
// provenance is stored under "generated_from".
func WriteCorpus(version string, provenance map[string]string, tools []config.Tool) ([]byte, error) {
	sorted := append([]config.Tool(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	recs := make([]corpusTool, 0, len(sorted))
	for _, t := range sorted {
		desc := t.Description
		rec := corpusTool{Description: &desc, Server: t.Server, Tool: t.Name, ToolID: config.ToolID(t.Server, t.Name)}
		if s := bytes.TrimSpace(t.Schema); len(s) > 0 && !bytes.Equal(s, []byte("null")) {
			canon, err := arms.CanonicalJSON(s)
			if err != nil {
				return nil, fmt.Errorf("tool %s: schema: %w", rec.ToolID, err)
			}
			rec.Schema = json.RawMessage(canon)
		}
		recs = append(recs, rec)
	}
	out := struct {
		GeneratedFrom map[string]string `json:"generated_from,omitempty"`
		ToolCount     int               `json:"tool_count"`
		Tools         []corpusTool      `json:"tools"`
		Version       string            `json:"version"`
	}{provenance, len(recs), recs, version}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encoding corpus: %w", err)
	}
	return buf.Bytes(), nil
}
