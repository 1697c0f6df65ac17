package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// randomJSON writes a random JSON value of at most depth levels, in a
// random layout (space, key order), with strings full of escapes.
func randomJSON(rng *rand.Rand, depth int) string {
	sp := func() string { return []string{"", " ", "\n\t", "  "}[rng.IntN(4)] }
	switch k := rng.IntN(7); {
	case depth > 0 && k == 0:
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = sp() + randomJSON(rng, depth-1) + sp()
		}
		return "[" + sp() + strings.Join(parts, ",") + "]"
	case depth > 0 && k == 1:
		n := rng.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			key := []string{`"type"`, `"text"`, `"cache_control"`, `"a\"b"`, `"\u00e9"`, `"k` + fmt.Sprint(rng.IntN(3)) + `"`}[rng.IntN(6)]
			parts[i] = sp() + key + sp() + ":" + sp() + randomJSON(rng, depth-1) + sp()
		}
		return "{" + strings.Join(parts, ",") + "}"
	case k == 2:
		return []string{"true", "false", "null", "0", "-12.5e3", "42"}[rng.IntN(6)]
	}
	pieces := []string{"plain", `\"`, `\\`, `\/`, `\n`, `\t`, `\u0041`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "é", "日本", " ", "[", "}", ","}
	var b strings.Builder
	b.WriteByte('"')
	for n := rng.IntN(8); n > 0; n-- {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	b.WriteByte('"')
	return b.String()
}

func TestRawJSONAgreesWithEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		doc := randomJSON(rng, 4)
		if !json.Valid([]byte(doc)) {
			t.Fatalf("generator made invalid JSON: %s", doc)
		}
		var want any
		_ = json.Unmarshal([]byte(doc), &want)
		switch firstByte([]byte(doc)) {
		case '[':
			elems, ok := splitArray([]byte(doc))
			w := want.([]any)
			if !ok || len(elems) != len(w) {
				t.Fatalf("splitArray(%s): %d elements, ok %v; want %d", doc, len(elems), ok, len(w))
			}
			for j, e := range elems {
				var got any
				if err := json.Unmarshal(e, &got); err != nil || !reflect.DeepEqual(got, w[j]) {
					t.Fatalf("splitArray(%s)[%d] = %s", doc, j, e)
				}
			}
		case '{':
			f, ok := objectFields([]byte(doc))
			w := want.(map[string]any)
			if !ok || len(f.vals) != len(w) {
				t.Fatalf("objectFields(%s): %d members, ok %v; want %d", doc, len(f.vals), ok, len(w))
			}
			for k, v := range f.vals {
				var got any
				if err := json.Unmarshal(v, &got); err != nil || !reflect.DeepEqual(got, w[k]) {
					t.Fatalf("objectFields(%s)[%q] = %s, want %v", doc, k, v, w[k])
				}
			}
		case '"':
			got, ok := decodeString([]byte(doc))
			if !ok || got != want.(string) {
				t.Fatalf("decodeString(%s) = %q, %v; want %q", doc, got, ok, want)
			}
		}
		// canonical: the same value as encoding/json sees it, cache_control
		// dropped; and the same bytes for any layout of it.
		c := canonical([]byte(doc))
		var back any
		if err := json.Unmarshal(c, &back); err != nil {
			t.Fatalf("canonical(%s) = %s is not JSON: %v", doc, c, err)
		}
		if !reflect.DeepEqual(back, dropCacheControl(want)) {
			t.Fatalf("canonical(%s) = %s, a different value", doc, c)
		}
		if again := canonical(c); !bytes.Equal(again, c) {
			t.Fatalf("canonical is not idempotent: %s then %s", c, again)
		}
	}
}

func TestRawJSONRefusesMalformed(t *testing.T) {
	doc := `{"a": [1, "x\"y", {"b": null}], "c": "d"}`
	for i := 0; i < len(doc); i++ {
		cut := []byte(doc[:i])
		if _, ok := splitObject(cut); ok {
			t.Errorf("splitObject(%q) accepted a cut document", cut)
		}
	}
	for _, bad := range []string{`{"a" 1}`, `{"a":1 "b":2}`, `{a:1}`, `[1 2]`, `[1,]x`, `{"a":1}}`, `"abc`, `"a"b"`, `"\q"`, "\"a\x01\""} {
		_, okA := splitArray([]byte(bad))
		_, okO := splitObject([]byte(bad))
		_, okS := decodeString([]byte(bad))
		if okA || okO || okS {
			t.Errorf("%q accepted (array %v, object %v, string %v)", bad, okA, okO, okS)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{`[1,"a",{"b":[]}]`, `{"a":"\u00e9\n","b":{"c":[true]}}`, `"x\"y"`, `[`, `{"a":}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		valid := json.Valid(b)
		if elems, ok := splitArray(b); ok && valid {
			var want []json.RawMessage
			if json.Unmarshal(b, &want) != nil || len(want) != len(elems) {
				t.Fatalf("splitArray(%q) = %d elements", s, len(elems))
			}
		}
		if f, ok := objectFields(b); ok && valid {
			var want map[string]json.RawMessage
			if json.Unmarshal(b, &want) != nil || len(want) != len(f.vals) {
				t.Fatalf("objectFields(%q) = %d members", s, len(f.vals))
			}
		}
		if got, ok := decodeString(b); ok && valid {
			var want string
			if json.Unmarshal(b, &want) != nil || want != got {
				t.Fatalf("decodeString(%q) = %q, want %q", s, got, want)
			}
		}
		_ = canonical(b)
	})
}

// nested is a value nested depth deep: objects within objects (each also
// holding a later key, so its members must be sorted) or arrays.
func nested(depth int, objects bool) []byte {
	var b bytes.Buffer
	for range depth {
		if objects {
			b.WriteString(`{"z":1,"a":`)
		} else {
			b.WriteString(`[1,`)
		}
	}
	b.WriteString(`"leaf"`)
	for range depth {
		if objects {
			b.WriteString(`}`)
		} else {
			b.WriteString(`]`)
		}
	}
	return b.Bytes()
}

// canonicalize's work is linear in its input at any depth: counted in
// bytes examined, not by a clock. Splitting level by level examined each
// byte once per level above it.
func TestCanonicalizeIsLinear(t *testing.T) {
	for _, objects := range []bool{true, false} {
		for _, depth := range []int{1000, 8000} {
			raw := nested(depth, objects)
			c := canonicalizer{raw: raw}
			if !c.run() {
				t.Fatalf("depth %d: canonicalize refused a well-formed value", depth)
			}
			if c.steps > 3*len(raw) {
				t.Errorf("objects=%v depth %d: %d bytes examined for %d bytes, want at most 3 per byte", objects, depth, c.steps, len(raw))
			}
			want := string(raw)
			if objects {
				want = strings.ReplaceAll(strings.ReplaceAll(want, `"z":1,"a":`, `"a":`), `}`, `,"z":1}`)
			}
			if string(c.out) != want {
				t.Errorf("objects=%v depth %d: canonical form differs from the expected one", objects, depth)
			}
		}
	}
	if _, ok := canonicalize(nil, nested(maxCanonicalDepth+1, false)); ok {
		t.Errorf("canonicalize took a value nested past maxCanonicalDepth")
	}
}
