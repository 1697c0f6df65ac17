package largeargs

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// plainValue is a JSON value plainObject decodes itself: strings (with
// quotes, backslashes, control characters, HTML characters and non-ASCII,
// all of which json.Marshal escapes one way or another), booleans, null
// and objects of those.
func plainValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(6); {
	case depth <= 0 || k <= 1:
		const alphabet = "ab \"\\/{}[],:\n\t\x01\x1f<>&\u2028é€😀"
		runes := []rune(alphabet)
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		return b.String()
	case k == 2:
		return r.IntN(2) == 0
	case k == 3:
		return nil
	default:
		m := map[string]any{}
		for range r.IntN(4) {
			m[string(rune('a'+r.IntN(26)))+"é"] = plainValue(r, depth-1)
		}
		return m
	}
}

// TestPlainObjectMatchesDecoding: over random objects, encoded with and
// without HTML escaping and with white space, plainObject decodes what
// encoding/json decodes, without falling back to it.
func TestPlainObjectMatchesDecoding(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(13, 2))
	for i := range 300 {
		v := map[string]any{}
		for range r.IntN(5) {
			v[string(rune('a'+r.IntN(26)))] = plainValue(r, 3)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(r.IntN(2) == 0)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if r.IntN(2) == 0 {
			data = spaced(r, data)
		}
		got, ok := plainObject(data)
		if !ok {
			t.Fatalf("object %d: plainObject left %s to encoding/json", i, data)
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("object %d %s (-encoding/json +plainObject):\n%s", i, data, diff)
		}
	}
}

// TestPlainObjectLeaves: what plainObject leaves to encoding/json, well-
// formed or not.
func TestPlainObjectLeaves(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, data string }{
		{"number", `{"a":1}`},
		{"array", `{"a":["b"]}`},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`},
		{"lone surrogate", `{"a":"\ud83d"}`},
		{"invalid UTF-8", "{\"a\":\"\xff\"}"},
		{"raw control character", "{\"a\":\"\x01\"}"},
		{"control character in a key", "{\"\x01\":\"b\"}"},
		{"escaped key", `{"\u0061":"b"}`},
		{"unknown escape", `{"a":"\x"}`},
		{"short \\u", `{"a":"\u12"}`},
		{"bad hex", `{"a":"\u12g4"}`},
		{"misspelt literal", `{"a":nul}`},
		{"not an object", `"a"`},
		{"missing colon", `{"a" "b"}`},
		{"trailing comma", `{"a":"b",}`},
		{"wrong bracket", `{"a":{"b":"c"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m, ok := plainObject([]byte(tc.data)); ok {
				t.Fatalf("plainObject(%s) = %v, want it left to encoding/json", tc.data, m)
			}
		})
	}
}

// FuzzPlainObject: whatever plainObject decodes, encoding/json decodes the
// same way.
func FuzzPlainObject(f *testing.F) {
	f.Add([]byte(`{"path":"/tmp/a","content":"x\ny \"z\" \u00e9 \u003c","ok":true,"n":null,"o":{}}`))
	f.Add([]byte(`{ "a" : { "b" : "\/" } }`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := plainObject(data)
		if !ok {
			return
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("plainObject decoded %q, which encoding/json refuses: %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-encoding/json +plainObject):\n%s", diff)
		}
	})
}

// BenchmarkPlainObject decodes a 5 MB write_file's arguments with
// plainObject and with encoding/json (issue 13).
func BenchmarkPlainObject(b *testing.B) {
	line := "line of a five megabyte file written through write_file, 0123456789.\n"
	data, _ := json.Marshal(map[string]any{"path": "/tmp/w0.txt", "content": strings.Repeat(line, 5<<20/len(line))})
	var plain, decode time.Duration
	for range b.N {
		start := time.Now()
		if _, ok := plainObject(data); !ok {
			b.Fatal("left to encoding/json")
		}
		plain += time.Since(start)
		start = time.Now()
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
		decode += time.Since(start)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
	b.ReportMetric(float64(decode.Nanoseconds())/float64(b.N), "json-ns/op")
	b.ReportMetric(float64(plain)/float64(decode), "plain/json")
}

// TestPlainObjectDepth: plainObject decodes nested objects in one pass up
// to maxPlainDepth and leaves deeper ones to encoding/json, which bounds
// its own nesting (issue 26: each level was rescanned, and the recursion
// had no bound).
func TestPlainObjectDepth(t *testing.T) {
	t.Parallel()
	nest := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":`, depth-1) + `{"b":"leaf"}` + strings.Repeat("}", depth-1))
	}
	got, ok := plainObject(nest(maxPlainDepth))
	var want map[string]any
	if err := json.Unmarshal(nest(maxPlainDepth), &want); err != nil || !ok || !cmp.Equal(got, want) {
		t.Errorf("depth %d: plainObject ok=%v, want the value encoding/json decodes (%v)", maxPlainDepth, ok, err)
	}
	if _, ok := plainObject(nest(16000)); ok {
		t.Errorf("depth 16000: plainObject decoded it, want it left to encoding/json")
	}
}
