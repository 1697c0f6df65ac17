package toon

import (
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// fixtureOptions is the union of the encode and decode options of
// tests/fixtures.schema.json.
type fixtureOptions struct {
	Delimiter    *string `json:"delimiter"`
	Indent       *int    `json:"indent"`
	KeyFolding   *string `json:"keyFolding"`
	FlattenDepth *int    `json:"flattenDepth"`
	Strict       *bool   `json:"strict"`
	ExpandPaths  *string `json:"expandPaths"`
}

type fixtureCase struct {
	Name           string          `json:"name"`
	Input          json.RawMessage `json:"input"`
	Expected       json.RawMessage `json:"expected"`
	ShouldError    bool            `json:"shouldError"`
	Options        fixtureOptions  `json:"options"`
	SpecSection    string          `json:"specSection"`
	Note           string          `json:"note"`
	MinSpecVersion string          `json:"minSpecVersion"`
}

type fixtureFile struct {
	Version     string        `json:"version"`
	Category    string        `json:"category"`
	Description string        `json:"description"`
	Tests       []fixtureCase `json:"tests"`
}

// loadFixtures reads every fixture file of one category, keyed by file name.
func loadFixtures(t *testing.T, category string) (files []string, byFile map[string][]fixtureCase, total int) {
	t.Helper()
	dir := filepath.Join(testenv.NodePackage(t, "@toon-format/spec", ""), "tests", "fixtures", category)
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	byFile = make(map[string][]fixtureCase)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f fixtureFile
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		if f.Category != category {
			t.Fatalf("%s: category %q, want %q", p, f.Category, category)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		files = append(files, name)
		byFile[name] = f.Tests
		total += len(f.Tests)
	}
	return files, byFile, total
}

func (o fixtureOptions) encode(t *testing.T) Options {
	t.Helper()
	var opts Options
	if o.Indent != nil {
		opts.Indent = *o.Indent
	}
	if o.Delimiter != nil {
		r := []rune(*o.Delimiter)
		if len(r) != 1 {
			t.Fatalf("delimiter %q is not one character", *o.Delimiter)
		}
		opts.Delimiter = r[0]
	}
	if o.KeyFolding != nil {
		opts.KeyFolding = *o.KeyFolding
	}
	if o.FlattenDepth != nil {
		opts.FlattenDepth = *o.FlattenDepth
		if opts.FlattenDepth == 0 {
			// The spec's flattenDepth 0 disables folding; our 0 means "no
			// cap", and 1 is the value that disables folding (a fold needs
			// two segments).
			opts.FlattenDepth = 1
		}
	}
	return opts
}

func (o fixtureOptions) decode() DecodeOptions {
	var opts DecodeOptions
	if o.Indent != nil {
		opts.Indent = *o.Indent
	}
	if o.Strict != nil {
		opts.Lenient = !*o.Strict
	}
	if o.ExpandPaths != nil {
		opts.ExpandPaths = *o.ExpandPaths
	}
	return opts
}

// Counts of the fixture suite of @toon-format/spec 3.3.2; asserting them
// means an emptied or truncated fixture directory cannot pass.
const (
	wantEncodeFixtures = 153
	wantDecodeFixtures = 247
)

// runFixtures runs check as a subtest on every fixture of one category,
// grouped by file, and fails unless exactly want fixtures were found and ran.
func runFixtures(t *testing.T, category string, want int, check func(t *testing.T, tc fixtureCase)) {
	t.Helper()
	files, byFile, total := loadFixtures(t, category)
	if total != want {
		t.Fatalf("got %d %s fixtures, want %d", total, category, want)
	}
	ran := 0
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			for _, tc := range byFile[file] {
				ran++
				t.Run(tc.Name, func(t *testing.T) { check(t, tc) })
			}
		})
	}
	if ran != want {
		t.Fatalf("ran %d %s fixtures, want %d", ran, category, want)
	}
}

func TestEncodeFixtures(t *testing.T) {
	runFixtures(t, "encode", wantEncodeFixtures, func(t *testing.T, tc fixtureCase) {
		got, err := EncodeJSON(tc.Input, tc.Options.encode(t))
		if tc.ShouldError {
			if err == nil {
				t.Fatalf("got output %q, want an error", got)
			}
			return
		}
		if err != nil {
			t.Fatalf("EncodeJSON(%s): %v", tc.Input, err)
		}
		var want string
		if err := json.Unmarshal(tc.Expected, &want); err != nil {
			t.Fatalf("expected is not a string: %v", err)
		}
		if got != want {
			t.Errorf("EncodeJSON(%s)\n got: %q\nwant: %q", tc.Input, got, want)
		}
	})
}

func TestDecodeFixtures(t *testing.T) {
	runFixtures(t, "decode", wantDecodeFixtures, func(t *testing.T, tc fixtureCase) {
		var input string
		if err := json.Unmarshal(tc.Input, &input); err != nil {
			t.Fatalf("input is not a string: %v", err)
		}
		got, err := Decode(input, tc.Options.decode())
		if tc.ShouldError {
			if err == nil {
				t.Fatalf("Decode(%q) = %#v, want an error", input, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v", input, err)
		}
		want, err := parseJSON(tc.Expected)
		if err != nil {
			t.Fatalf("expected: %v", err)
		}
		if diff := cmp.Diff(toPublic(want), got, numberByValue); diff != "" {
			t.Errorf("Decode(%q) mismatch (-want +got):\n%s", input, diff)
		}
	})
}

// sameJSON is JSON-model equality (spec §2): ordered object keys, numbers
// by value. It is the fast path; cmp.Diff with numberByValue explains a
// mismatch.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case Object:
		y, ok := b.(Object)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !sameJSON(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		p, ok1 := new(big.Rat).SetString(string(x))
		q, ok2 := new(big.Rat).SetString(string(y))
		return ok1 && ok2 && p.Cmp(q) == 0
	case nil, bool, string:
		return a == b
	}
	return false
}

// numberByValue compares numbers by mathematical value (spec §2 equality),
// independently of the canonicalization under test.
var numberByValue = cmp.Comparer(func(a, b json.Number) bool {
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(string(b))
	return ok1 && ok2 && x.Cmp(y) == 0
})
