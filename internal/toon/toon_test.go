package toon

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCanonicalNumber(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "0", want: "0"},
		{in: "-0", want: "0"},
		{in: "-0.000", want: "0"},
		{in: "0e10", want: "0"},
		{in: "1.5000", want: "1.5"},
		{in: "1.0", want: "1"},
		{in: "1e6", want: "1000000"},
		{in: "1E+3", want: "1000"},
		{in: "100e-2", want: "1"},
		{in: "12345.678e-2", want: "123.45678"},
		{in: "1e-6", want: "0.000001"},
		{in: "0.000001234", want: "0.000001234"},
		{in: "1e-7", want: "1e-7"},
		{in: "-1.5e-7", want: "-1.5e-7"},
		{in: "1e20", want: "100000000000000000000"},
		{in: "999999999999999999999", want: "999999999999999999999"},
		{in: "1e21", want: "1e+21"},
		{in: "1000000000000000000000", want: "1e+21"},
		{in: "-1.25e21", want: "-1.25e+21"},
		{in: "1e400", want: "1e+400"},
		// Lossless: digits beyond float64 precision survive.
		{in: "9007199254740993", want: "9007199254740993"},
		{in: "123456789012345678901234567890", want: "1.2345678901234567890123456789e+29"},
		{in: "0.12345678901234567890123", want: "0.12345678901234567890123"},
		{in: "05", wantErr: true},
		{in: "1.", wantErr: true},
		{in: ".5", wantErr: true},
		{in: "+1", wantErr: true},
		{in: "1e", wantErr: true},
		{in: "0x10", wantErr: true},
		{in: "", wantErr: true},
		{in: "1e99999999999", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := canonicalNumber(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("canonicalNumber(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("canonicalNumber(%q): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

type sample struct {
	Name  string   `json:"name"`
	Tags  []string `json:"tags,omitempty"`
	Skip  string   `json:"-"`
	Count int      `json:"count"`
}

func TestEncodeGoValues(t *testing.T) {
	tests := []struct {
		name string
		in   any
		opts Options
		want string
	}{
		{name: "nil", in: nil, want: "null"},
		{name: "int64 max", in: int64(math.MaxInt64), want: "9223372036854775807"},
		{name: "uint64 max", in: uint64(math.MaxUint64), want: "18446744073709551615"},
		{name: "float32 prints as float32", in: float32(0.1), want: "0.1"},
		{name: "negative zero", in: math.Copysign(0, -1), want: "0"},
		{name: "NaN is null", in: math.NaN(), want: "null"},
		{name: "infinity is null", in: Object{{"x", math.Inf(-1)}}, want: "x: null"},
		{name: "tiny float", in: 1.5e-7, want: "1.5e-7"},
		{name: "huge float", in: 1e21, want: "1e+21"},
		{name: "json.Number kept exact", in: json.Number("12345678901234567890"), want: "12345678901234567890"},
		{name: "map keys sorted", in: map[string]any{"b": 1, "a": 2, "c": []any{}}, want: "a: 2\nb: 1\nc: []"},
		{name: "empty root object", in: Object{}, want: ""},
		{name: "struct through encoding/json", in: sample{Name: "x", Tags: []string{"a", "b"}, Skip: "no", Count: 2}, want: "name: x\ntags[2]: a,b\ncount: 2"},
		{name: "slice of Objects", in: []Object{{{"id", 1}, {"n", "a"}}, {{"id", 2}, {"n", "b"}}}, want: "[2]{id,n}:\n  1,a\n  2,b"},
		{name: "invalid UTF-8 replaced", in: "a\xffb", want: "a\uFFFDb"},
		{name: "raw message", in: json.RawMessage(`{"z":1,"a":[1,2]}`), want: "z: 1\na[2]: 1,2"},
		{name: "pipe delimiter quotes pipes not commas", in: Object{{"t", []any{"a|b", "c,d"}}}, opts: Options{Delimiter: '|'}, want: `t[2|]: "a|b"|c,d`},
		{name: "field values use the document delimiter", in: Object{{"v", "a,b"}}, opts: Options{Delimiter: '\t'}, want: "v: a,b"},
		{name: "indent 4", in: Object{{"a", Object{{"b", 1}}}}, opts: Options{Indent: 4}, want: "a:\n    b: 1"},
		{name: "folding", in: Object{{"a", Object{{"b", Object{{"c", 1}}}}}}, opts: Options{KeyFolding: FoldingSafe}, want: "a.b.c: 1"},
		{name: "folding capped", in: Object{{"a", Object{{"b", Object{{"c", 1}}}}}}, opts: Options{KeyFolding: FoldingSafe, FlattenDepth: 2}, want: "a.b:\n  c: 1"},
		{name: "folding avoids sibling collision", in: Object{{"a", Object{{"b", 1}}}, {"a.b", 2}}, opts: Options{KeyFolding: FoldingSafe}, want: "a:\n  b: 1\na.b: 2"},
		{name: "folding skips non-identifiers", in: Object{{"a", Object{{"b-c", 1}}}}, opts: Options{KeyFolding: FoldingSafe}, want: "a:\n  \"b-c\": 1"},
		{name: "control characters escaped", in: "a\x01\x1f\u007f", want: `"a\u0001\u001f` + "\u007f\""},
		{name: "unicode whitespace at the edge is quoted", in: "\u00a0x", want: "\"\u00a0x\""},
		{name: "inner unicode stays bare", in: "日本 🎉", want: "日本 🎉"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.in, tc.opts)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if got != tc.want {
				t.Errorf("Encode(%#v): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		in   any
		opts Options
		want string
	}{
		{name: "bad delimiter", in: 1, opts: Options{Delimiter: ';'}, want: "delimiter"},
		{name: "bad folding mode", in: 1, opts: Options{KeyFolding: "always"}, want: "key folding"},
		{name: "negative indent", in: 1, opts: Options{Indent: -1}, want: "indent"},
		{name: "negative flatten depth", in: 1, opts: Options{FlattenDepth: -2}, want: "flatten depth"},
		{name: "duplicate key", in: Object{{"a", 1}, {"a", 2}}, want: `duplicate key "a"`},
		{name: "invalid json.Number", in: Object{{"n", json.Number("1.2.3")}}, want: "not a JSON number"},
		{name: "unmarshalable type", in: make(chan int), want: "chan int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode(tc.in, tc.opts)
			if err == nil {
				t.Fatalf("got %q, want an error containing %q", got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEncodeJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "key order kept", in: `{"z":1,"a":2}`, want: "z: 1\na: 2"},
		{name: "repeated key keeps first position, last value", in: `{"a":1,"b":2,"a":3}`, want: "a: 3\nb: 2"},
		{name: "number literals canonical", in: `[1.50, 1E3, -0, 1e-7]`, want: "[4]: 1.5,1000,0,1e-7"},
		{name: "big integer exact", in: `{"id": 123456789012345678901}`, want: "id: 123456789012345678901"},
		{name: "whitespace around the value", in: " \n true \n", want: "true"},
		{name: "invalid JSON", in: `{"a":}`, wantErr: true},
		{name: "two values", in: `1 2`, wantErr: true},
		{name: "truncated", in: `[1,2`, wantErr: true},
		{name: "empty", in: ``, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeJSON([]byte(tc.in), Options{})
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("EncodeJSON(%s): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("EncodeJSON(%s): got %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestEncodeDeterministicAndPure(t *testing.T) {
	in := map[string]any{
		"tools": []any{
			map[string]any{"name": "read", "size": 1, "tags": []any{"fs", "io"}},
			map[string]any{"name": "write", "size": 2, "tags": []any{"fs"}},
		},
		"meta": Object{{"z", 1}, {"a", json.Number("2.50")}},
	}
	before, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	first, err := Encode(in, Options{KeyFolding: FoldingSafe})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		got, err := Encode(in, Options{KeyFolding: FoldingSafe})
		if err != nil {
			t.Fatal(err)
		}
		if got != first {
			t.Fatalf("Encode is not deterministic: got %q, then %q", first, got)
		}
	}
	after, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("Encode mutated its input: before %s, after %s", before, after)
	}
}

func TestDecodeEdges(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts DecodeOptions
		want any
	}{
		{name: "empty document", in: "", want: Object{}},
		{name: "blank lines only", in: "\n  \n", want: Object{}},
		{name: "numbers canonical", in: "[4]: 1.5000,-0,1E3,05", want: []any{json.Number("1.5"), json.Number("0"), json.Number("1000"), "05"}},
		{name: "huge number exact", in: "n: 123456789012345678901234567890", want: Object{{"n", json.Number("1.2345678901234567890123456789e+29")}}},
		{name: "quoted primitives stay strings", in: `[3]: "1","true","null"`, want: []any{"1", "true", "null"}},
		{name: "trailing newline accepted", in: "a: 1\n", want: Object{{"a", json.Number("1")}}},
		{name: "lenient duplicate keeps first position", in: "a: 1\nb: 2\na: 3", opts: DecodeOptions{Lenient: true}, want: Object{{"a", json.Number("3")}, {"b", json.Number("2")}}},
		{name: "quoted dotted key not expanded", in: "\"a.b\": 1\nc.d: 2", opts: DecodeOptions{ExpandPaths: ExpandSafe}, want: Object{{"a.b", json.Number("1")}, {"c", Object{{"d", json.Number("2")}}}}},
		{name: "quoted dotted header key not expanded", in: "\"a.b\"[2]: 1,2", opts: DecodeOptions{ExpandPaths: ExpandSafe}, want: Object{{"a.b", []any{json.Number("1"), json.Number("2")}}}},
		{name: "quoted field name not expanded", in: "t[1]{\"a.b\",c.d}:\n  1,2", opts: DecodeOptions{ExpandPaths: ExpandSafe}, want: Object{{"t", []any{Object{{"a.b", json.Number("1")}, {"c", Object{{"d", json.Number("2")}}}}}}}},
		{name: "quoted key after extra spaces in a list item", in: "l[1]:\n  -  \"a b\": 1", want: Object{{"l", []any{Object{{"a b", json.Number("1")}}}}}},
		{name: "expansion merges deeply", in: "a.b: 1\na.c.d: 2\na.c.e: 3", opts: DecodeOptions{ExpandPaths: ExpandSafe}, want: Object{{"a", Object{{"b", json.Number("1")}, {"c", Object{{"d", json.Number("2")}, {"e", json.Number("3")}}}}}}},
		{name: "lenient ignores orphan indentation", in: "a: 1\n    b: 2", opts: DecodeOptions{Lenient: true}, want: Object{{"a", json.Number("1")}}},
		{name: "escapes", in: `s: "a\tb\\c\"d\u00e9\u0001"`, want: Object{{"s", "a\tb\\c\"dé\x01"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.in, tc.opts)
			if err != nil {
				t.Fatalf("Decode(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		opts     DecodeOptions
		wantLine int
		want     string
	}{
		{name: "orphan indented line", in: "a: 1\n    b: 2", wantLine: 2, want: "indentation"},
		{name: "lone surrogate escape", in: `s: "\ud83c"`, wantLine: 1, want: "surrogate"},
		{name: "unknown escape", in: `s: "\x41"`, wantLine: 1, want: "invalid escape"},
		{name: "short unicode escape", in: `s: "\u12"`, wantLine: 1, want: "four hex digits"},
		{name: "length mismatch", in: "t[3]: a,b", wantLine: 1, want: "declares 3"},
		{name: "row width", in: "t[1]{a,b}:\n  1", wantLine: 2, want: "fields"},
		{name: "duplicate key", in: "a: 1\na: 2", wantLine: 2, want: "duplicate"},
		{name: "missing colon", in: "a: 1\nb", wantLine: 2, want: "missing colon"},
		{name: "tab indentation", in: "a:\n\tb: 1", wantLine: 2, want: "tab"},
		{name: "blank line in list", in: "t[2]:\n  - 1\n\n  - 2", wantLine: 3, want: "blank line"},
		{name: "expansion conflict", in: "a.b: 1\na: 2", opts: DecodeOptions{ExpandPaths: ExpandSafe}, want: "conflict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.in, tc.opts)
			if err == nil {
				t.Fatalf("Decode(%q) = %#v, want an error", tc.in, got)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got error %T (%v), want *SyntaxError", err, err)
			}
			if se.Line != tc.wantLine {
				t.Errorf("got line %d, want %d (%v)", se.Line, tc.wantLine, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDecodeOptionErrors(t *testing.T) {
	for _, opts := range []DecodeOptions{{Indent: -2}, {ExpandPaths: "deep"}} {
		if _, err := Decode("a: 1", opts); err == nil {
			t.Errorf("Decode with %+v: got no error, want one", opts)
		}
	}
}

func TestNestingLimit(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	if _, err := EncodeJSON([]byte(deep), Options{}); !errors.Is(err, errTooDeep) {
		t.Errorf("EncodeJSON of %d nested arrays: got %v, want errTooDeep", maxDepth+2, err)
	}
}

func TestObjectJSON(t *testing.T) {
	var o Object
	if err := json.Unmarshal([]byte(`{"b":{"y":1,"x":2.50},"a":[true]}`), &o); err != nil {
		t.Fatal(err)
	}
	want := Object{{"b", Object{{"y", json.Number("1")}, {"x", json.Number("2.5")}}}, {"a", []any{true}}}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("UnmarshalJSON mismatch (-want +got):\n%s", diff)
	}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), `{"b":{"y":1,"x":2.5},"a":[true]}`; got != want {
		t.Errorf("MarshalJSON: got %s, want %s", got, want)
	}
	if err := json.Unmarshal([]byte(`[1]`), &o); err == nil {
		t.Error("UnmarshalJSON of an array: got no error, want one")
	}
}
