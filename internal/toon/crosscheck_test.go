package toon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The reference encoder this package is checked against, as pinned in the
// repository's package.json.
const referenceVersion = "2.3.1"

// genCase is one generated JSON document plus the options to encode it with.
type genCase struct {
	json []byte
	opts Options
	// lossy marks documents holding number literals with more digits than a
	// float64 keeps: the reference encoder (JSON.parse) rounds them, we keep
	// every digit, so only the numeric values are compared.
	lossy bool
}

func TestCrossCheckReferenceEncoder(t *testing.T) {
	cases := generateCases(400)
	refs := runReferenceEncoder(t, cases)
	identical, lossy := 0, 0
	for i, c := range cases {
		got, err := EncodeJSON(c.json, c.opts)
		if err != nil {
			t.Errorf("case %d: EncodeJSON(%s, %+v): %v", i, c.json, c.opts, err)
			continue
		}
		ref := refs[i]
		if c.lossy {
			lossy++
			// Documented deviation: both outputs must decode to the same
			// float64 values; ours additionally keeps the literal's digits.
			if diff := cmp.Diff(decodeAsFloats(t, ref, c.opts), decodeAsFloats(t, got, c.opts)); diff != "" {
				t.Errorf("case %d: %s\nvalues differ from the reference (-ref +ours):\n%s", i, c.json, diff)
			}
			continue
		}
		if got != ref {
			t.Errorf("case %d: EncodeJSON(%s, %+v)\n ours: %q\n  ref: %q", i, c.json, c.opts, got, ref)
			continue
		}
		identical++
	}
	if identical < 300 {
		t.Errorf("only %d cases compared byte for byte, want at least 300", identical)
	}
	t.Logf("%d documents byte-identical to @toon-format/toon %s, %d lossless-number documents equal by value", identical, referenceVersion, lossy)
}

// TestRoundTrip checks Decode(Encode(v)) == v over the generated documents.
func TestRoundTrip(t *testing.T) {
	for i, c := range generateCases(400) {
		want, err := parseJSON(c.json)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		enc, err := EncodeJSON(c.json, c.opts)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		var dopts DecodeOptions
		dopts.Indent = c.opts.Indent
		if c.opts.KeyFolding == FoldingSafe {
			// Folding is reversible only with path expansion, and only when
			// no literal key already contains a dot.
			if hasDottedKey(want) {
				continue
			}
			dopts.ExpandPaths = ExpandSafe
		}
		got, err := Decode(enc, dopts)
		if err != nil {
			t.Errorf("case %d: Decode(%q): %v", i, enc, err)
			continue
		}
		if w := tableOrder(toPublic(want)); !sameJSON(w, got) {
			t.Errorf("case %d: round trip of %s through %q (-want +got):\n%s", i, c.json, enc, cmp.Diff(w, got, numberByValue))
		}
	}
}

// tableOrder returns v with the rows of every tabular-eligible array (spec
// §9.3: non-empty objects, one key set, primitive values) put in the first
// row's key order: a table has one column order, so per-row key order is the
// one thing a TOON round trip does not keep. Arrays that are themselves
// list items never become tables (spec §9.4) and keep every row's order.
func tableOrder(v any) any { return tableOrderIn(v, false) }

func tableOrderIn(v any, listItem bool) any {
	switch x := v.(type) {
	case Object:
		out := make(Object, len(x))
		for i, f := range x {
			out[i] = Field{f.Key, tableOrderIn(f.Value, false)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tableOrderIn(e, true)
		}
		first, ok := firstRowKeys(x)
		if !ok || listItem {
			return out
		}
		for i, e := range out {
			row := e.(Object)
			ordered := make(Object, 0, len(row))
			for _, k := range first {
				val, _ := row.Lookup(k)
				ordered = append(ordered, Field{k, val})
			}
			out[i] = ordered
		}
		return out
	}
	return v
}

// firstRowKeys returns the first row's keys when a is tabular-eligible.
func firstRowKeys(a []any) ([]string, bool) {
	if len(a) == 0 {
		return nil, false
	}
	first, ok := a[0].(Object)
	if !ok || len(first) == 0 {
		return nil, false
	}
	for _, e := range a {
		row, ok := e.(Object)
		if !ok || len(row) != len(first) {
			return nil, false
		}
		for _, f := range first {
			val, ok := row.Lookup(f.Key)
			if !ok {
				return nil, false
			}
			switch val.(type) {
			case Object, []any:
				return nil, false
			}
		}
	}
	return first.Keys(), true
}

func hasDottedKey(v any) bool {
	switch x := v.(type) {
	case Object:
		for _, f := range x {
			if strings.Contains(f.Key, ".") || hasDottedKey(f.Value) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasDottedKey(e) {
				return true
			}
		}
	}
	return false
}

// decodeAsFloats decodes TOON (strict) and turns every number into float64.
func decodeAsFloats(t *testing.T, s string, opts Options) any {
	t.Helper()
	v, err := Decode(s, DecodeOptions{Indent: opts.Indent})
	if err != nil {
		t.Fatalf("Decode(%q): %v", s, err)
	}
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				t.Fatalf("number %s: %v", x, err)
			}
			return f
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = conv(e)
			}
			return out
		case Object:
			out := make(Object, len(x))
			for i, f := range x {
				out[i] = Field{f.Key, conv(f.Value)}
			}
			return out
		}
		return v
	}
	return conv(v)
}

// runReferenceEncoder encodes every case with @toon-format/toon in a single
// Node process and returns the outputs by case index.
func runReferenceEncoder(t *testing.T, cases []genCase) []string {
	t.Helper()
	testenv.NodePackage(t, "@toon-format/toon", referenceVersion)
	script, err := filepath.Abs(filepath.Join("testdata", "reference_encode.mjs"))
	if err != nil {
		t.Fatal(err)
	}

	var in bytes.Buffer
	for i, c := range cases {
		opts := map[string]any{}
		if c.opts.Indent != 0 {
			opts["indent"] = c.opts.Indent
		}
		if c.opts.Delimiter != 0 {
			opts["delimiter"] = string(c.opts.Delimiter)
		}
		if c.opts.KeyFolding != "" {
			opts["keyFolding"] = c.opts.KeyFolding
		}
		if c.opts.FlattenDepth != 0 {
			opts["flattenDepth"] = c.opts.FlattenDepth
		}
		line, err := json.Marshal(map[string]any{"id": i, "json": string(c.json), "options": opts})
		if err != nil {
			t.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}

	out := testenv.NodeScript(t, script, &in)

	refs := make([]string, len(cases))
	seen := make([]bool, len(cases))
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var res struct {
			ID    int     `json:"id"`
			TOON  *string `json:"toon"`
			Error string  `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			t.Fatalf("reading reference output %q: %v", sc.Text(), err)
		}
		if res.ID < 0 || res.ID >= len(cases) || res.TOON == nil {
			t.Fatalf("reference encoder failed on case %d (%s): %s", res.ID, cases[res.ID].json, res.Error)
		}
		refs[res.ID] = *res.TOON
		seen[res.ID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for i, ok := range seen {
		if !ok {
			t.Fatalf("reference encoder returned nothing for case %d", i)
		}
	}
	return refs
}

// generateCases builds n JSON documents deterministically. The documents
// stress what the encoder decides: quoting, number layout, tabular
// detection, list-item layout, key quoting and folding.
func generateCases(n int) []genCase {
	r := rand.New(rand.NewPCG(20260529, 83))
	cases := make([]genCase, 0, n)
	for i := range n {
		g := &generator{r: r}
		var v any
		switch x := r.IntN(10); {
		case x < 6:
			v = g.object(3)
		case x < 9:
			v = g.array(3)
		default:
			v = g.primitive()
		}
		// A fixed share of the documents carries an out-of-float64 number.
		if i%25 == 7 {
			v = Object{{"exact", g.hugeNumber()}, {"rest", v}}
			g.lossy = true
		}
		var opts Options
		switch i % 6 {
		case 1:
			opts.Delimiter = '\t'
		case 2:
			opts.Delimiter = '|'
			opts.Indent = 4
		case 3:
			opts.KeyFolding = FoldingSafe
		case 4:
			opts.KeyFolding = FoldingSafe
			opts.FlattenDepth = 2
			opts.Indent = 3
		}
		raw, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("generated value does not marshal: %v", err))
		}
		cases = append(cases, genCase{json: raw, opts: opts, lossy: g.lossy})
	}
	return cases
}

type generator struct {
	r     *rand.Rand
	lossy bool
}

// trickyStrings are values whose quoting the spec decides case by case.
var trickyStrings = []string{
	"", " ", " lead", "trail ", "a b c", "true", "false", "null", "True", "NULL",
	"42", "-3.14", "1e-6", "1E+9", "05", "0", "-0", "00", "1.0", ".5", "5.", "+1", "0x1F", "1_000",
	"Infinity", "NaN", "-", "-a", "- item", "--", "a-b", "a,b", ",", "a|b", "|", "a\tb", "\t",
	"a:b", "http://example.com:8080/x?q=1", "key: value", "[3]: x,y", "[1]", "{x}", "a]b", "{",
	`quo"te`, `back\slash`, "line\nbreak", "cr\rhere", "\x01ctl", "del\x7f", "#hash", "@at",
	"héllo", "日本語テキスト", "emoji 🎉 party", "👍", "\u00a0nbsp", "x\u2028", "\ufeffbom",
	"mid\u3000space", "é", "Ω≈ç√", "null value", "true story", "a.b", "x=1;y=2", "'single'",
	"tab\tand,comma|pipe", "ends with colon:", "snake_case_word", "CamelCase", "path/to/file.txt",
}

var keyPool = []string{
	"id", "name", "type", "description", "value", "items", "data", "meta", "a", "b", "c", "x", "y",
	"_private", "user_name", "camelCase", "a.b", "x.y.z", "user-name", "with space", "", "123", "0",
	"1a", "quoted\"key", "ключ", "a:b", "[x]", "-dash", "emoji🎉", "tab\tkey",
}

func (g *generator) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *generator) word() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:|\t\"\\[]{}#/é日🎉"
	runes := []rune(alphabet)
	n := 1 + g.r.IntN(12)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[g.r.IntN(len(runes))])
	}
	return b.String()
}

func (g *generator) str() string {
	switch g.r.IntN(3) {
	case 0:
		return g.pick(trickyStrings)
	case 1:
		return g.word()
	default:
		return g.pick([]string{"alpha", "beta", "gamma", "Ada Lovelace", "ok", "pending", "done"})
	}
}

// numberLiterals are written as is into the JSON; each one parses to a
// float64 whose shortest form JavaScript prints, so both encoders agree.
var numberLiterals = []string{
	"0", "-0", "0.0", "-0.0", "1", "-1", "42", "1.5", "-3.25", "1.5000", "1E3", "1e21", "1e+21", "-1e21",
	"1e20", "123456789012345680000", "1e-6", "0.000001", "1e-7", "0.0000001", "-1.5e-7", "100e-2",
	"0.1", "0.3333333333333333", "9007199254740991", "9007199254740992", "-9007199254740992",
	"1152921504606847000", "1.7976931348623157e308", "5e-324", "2.5e-10", "123.456", "1e100", "12e-1",
}

func (g *generator) number() json.Number {
	switch g.r.IntN(3) {
	case 0:
		return json.Number(g.pick(numberLiterals))
	case 1:
		return json.Number(strconv.Itoa(g.r.IntN(2000) - 1000))
	default:
		// A random double written with its shortest round-trip digits.
		f := math.Float64frombits(g.r.Uint64())
		for math.IsNaN(f) || math.IsInf(f, 0) {
			f = math.Float64frombits(g.r.Uint64())
		}
		if g.r.IntN(2) == 0 {
			f = g.r.NormFloat64() * math.Pow(10, float64(g.r.IntN(30)-15))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
}

// hugeNumber returns a literal with more significant digits than a float64.
func (g *generator) hugeNumber() json.Number {
	return json.Number(g.pick([]string{
		"12345678901234567890123", "9007199254740993", "-98765432109876543210", "0.12345678901234567890123",
		"1.00000000000000000001", "3.14159265358979323846264338327950288",
	}))
}

func (g *generator) primitive() any {
	switch g.r.IntN(8) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2, 3:
		return g.number()
	default:
		return g.str()
	}
}

func (g *generator) value(depth int) any {
	if depth <= 0 {
		return g.primitive()
	}
	switch g.r.IntN(10) {
	case 0, 1:
		return g.object(depth - 1)
	case 2, 3:
		return g.array(depth - 1)
	case 4:
		return g.chain(depth)
	default:
		return g.primitive()
	}
}

func (g *generator) keys(n int) []string {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var k string
		if g.r.IntN(3) == 0 {
			k = g.pick(keyPool)
		} else {
			k = g.pick([]string{"id", "name", "status", "count", "tags", "owner", "config", "score", "kind", "url"})
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func (g *generator) object(depth int) Object {
	n := g.r.IntN(6)
	o := Object{}
	for _, k := range g.keys(n) {
		o = append(o, Field{k, g.value(depth)})
	}
	return jsOrder(o)
}

// chain builds nested single-key objects, sometimes with a colliding dotted
// sibling, to exercise key folding.
func (g *generator) chain(depth int) any {
	segs := 2 + g.r.IntN(3)
	var v any = g.primitive()
	switch g.r.IntN(4) {
	case 0:
		v = g.array(1)
	case 1:
		v = Object{}
	case 2:
		v = g.object(1)
	}
	for range segs {
		v = Object{{g.pick([]string{"a", "b", "data", "meta", "x", "user-name", "c"}), v}}
	}
	if g.r.IntN(3) == 0 {
		first := v.(Object)[0]
		return jsOrder(Object{first, {first.Key + ".b", 1}, {"other", g.primitive()}})
	}
	return v
}

func (g *generator) array(depth int) []any {
	n := g.r.IntN(5)
	out := []any{}
	switch g.r.IntN(7) {
	case 0: // primitives
		for range n + 1 {
			out = append(out, g.primitive())
		}
	case 1, 2: // uniform flat objects: tabular
		keys := g.keys(1 + g.r.IntN(4))
		for range n + 1 {
			row := Object{}
			for _, k := range keys {
				row = append(row, Field{k, g.primitive()})
			}
			// Shuffled key order keeps the array tabular.
			if g.r.IntN(4) == 0 {
				g.r.Shuffle(len(row), func(i, j int) { row[i], row[j] = row[j], row[i] })
			}
			out = append(out, jsOrder(row))
		}
		// Sometimes break uniformity on purpose.
		if g.r.IntN(4) == 0 {
			switch g.r.IntN(3) {
			case 0:
				out = append(out, Object{})
			case 1:
				out = append(out, Object{{keys[0], g.object(1)}})
			default:
				out[0] = append(out[0].(Object), Field{"extra_field", 1})
			}
		}
	case 3: // arrays of primitive arrays
		for range n + 1 {
			inner := []any{}
			for range g.r.IntN(4) {
				inner = append(inner, g.primitive())
			}
			out = append(out, inner)
		}
	case 4: // objects as list items, first field varied
		for range n + 1 {
			o := Object{}
			switch g.r.IntN(4) {
			case 0:
				o = append(o, Field{"rows", g.array(1)})
			case 1:
				o = append(o, Field{"nested", g.object(1)})
			case 2:
				o = append(o, Field{"list", []any{g.primitive(), g.object(0)}})
			}
			for _, k := range g.keys(g.r.IntN(3)) {
				if _, dup := o.Lookup(k); !dup {
					o = append(o, Field{k, g.value(depth)})
				}
			}
			out = append(out, jsOrder(o))
		}
	default: // mixed
		for range n {
			out = append(out, g.value(depth))
		}
	}
	return out
}

// jsOrder moves array-index-like keys ("0", "42") to the front in numeric
// order, which is how a JavaScript object orders them; the reference
// encoder cannot see any other order, so the generator does not produce one.
func jsOrder(o Object) Object {
	isIndex := func(k string) bool {
		if k == "" || (len(k) > 1 && k[0] == '0') {
			return false
		}
		n, err := strconv.ParseUint(k, 10, 32)
		return err == nil && n < math.MaxUint32
	}
	out := make(Object, 0, len(o))
	var idx Object
	for _, f := range o {
		if isIndex(f.Key) {
			idx = append(idx, f)
		} else {
			out = append(out, f)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool {
		a, _ := strconv.ParseUint(idx[i].Key, 10, 32)
		b, _ := strconv.ParseUint(idx[j].Key, 10, 32)
		return a < b
	})
	return append(idx, out...)
}
