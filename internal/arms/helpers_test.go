package arms

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
	goldenfile "github.com/mcproxy/mcproxy/internal/testenv/golden"
)

// loadCorpus reads corpus_v2.tools.json.
func loadCorpus(t *testing.T) []config.Tool {
	t.Helper()
	path := filepath.Join(testenv.Datasets(t), "corpus_v2.tools.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading corpus (set MCPROXY_DATASETS to the datasets directory): %v", err)
	}
	var c struct {
		Tools []config.Tool `json:"tools"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	if len(c.Tools) != 45 {
		t.Fatalf("corpus_v2 has %d tools, want 45", len(c.Tools))
	}
	return c.Tools
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), []byte(got))
}

// pureArms are the registered arms that need nothing outside the process.
func pureArms() []Arm {
	return []Arm{NewBaseline(), NewCompact(), NewBrief(), NewToonListing(), NewTron()}
}

// proxyTokens approximates a BPE tokenizer: each run of letters, each run of
// digits and each other non-space character is one token. It stands in where
// a test needs counts but not a particular tokenizer's.
type proxyTokens struct{}

var proxyToken = regexp.MustCompile(`\p{L}+|\p{N}+|\S`)

func (proxyTokens) Count(s string) int { return len(proxyToken.FindAllStringIndex(s, -1)) }

// shuffled rewrites a JSON value with every object's keys in a random order
// and random spacing, numbers and strings unchanged.
func shuffled(t *testing.T, raw []byte, rng *rand.Rand) json.RawMessage {
	t.Helper()
	v, err := decodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var write func(v any)
	write = func(v any) {
		b.WriteString([]string{"", " ", "\n  "}[rng.IntN(3)])
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			b.WriteString("{")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(",")
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteString(" : ")
				write(x[k])
			}
			b.WriteString("}")
		case []any:
			b.WriteString("[")
			for i, e := range x {
				if i > 0 {
					b.WriteString(" ,")
				}
				write(e)
			}
			b.WriteString("]")
		case json.Number:
			b.WriteString(string(x))
		default:
			vb, err := json.Marshal(x) // HTML-escaped on purpose: the arms must undo it
			if err != nil {
				t.Fatal(err)
			}
			b.Write(vb)
		}
	}
	write(v)
	return json.RawMessage(b.String())
}

// perTool renders every tool of ts with enc as one reviewable document.
func perTool(ts []config.Tool, enc func(config.Tool) (string, error)) (string, error) {
	var b strings.Builder
	for _, t := range ts {
		s, err := enc(t)
		if err != nil {
			return "", fmt.Errorf("%s: %w", t.ID, err)
		}
		fmt.Fprintf(&b, "=== %s\n%s\n", t.ID, s)
	}
	return b.String(), nil
}
