package expand

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallSource is a wink-shaped JSON source: 4 dimensions, l2 norm at 4,
// rank at 5. "runs" and "running" share the stem "run"; "the" is a stop
// word, "e-mail" not a plain word, "\u00e9t\u00e9" has an escape.
const smallSource = `{"precision": 8, "l2NormIndex": 4, "wordIndex": 5, "size": 7, "dimensions": 4,
 "words": ["the", "run", "cat", "running", "e-mail", "été", "dog"],
 "vectors": {
  "the": [1, 0, 0, 0, 1, 0],
  "run": [0, 3, 0, 0, 3, 1],
  "cat": [0, 0, 2, 0, 2, 2],
  "running": [0, 0, 0, 5, 5, 3],
  "e-mail": [1, 1, 0, 0, 1.4, 4],
  "\u00e9t\u00e9": [0, 0, -1e0, 0, 1, 5],
  "dog": [0, 0, 0.6, 0.8, 1, 6]
 },
 "unkVector": [0, 0, 0, 0, 0, -1]}`

func convertString(t *testing.T, src string, opts ConvertOptions) (*Vectors, ConvertStats, []byte) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Convert(strings.NewReader(src), &buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return v, st, buf.Bytes()
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestConvertSmall(t *testing.T) {
	v, st, _ := convertString(t, smallSource, ConvertOptions{Source: "test"})
	if got, want := st, (ConvertStats{Words: 7, Kept: 5, Terms: 4, Dims: 4}); got != want {
		t.Errorf("got stats %+v, want %+v", got, want)
	}
	var terms []string
	for i := range v.Len() {
		terms = append(terms, v.Term(i))
	}
	if got, want := strings.Join(terms, " "), "cat dog run été"; got != want {
		t.Errorf("got terms %q, want %q", got, want)
	}
	if got := v.Source(); got != "test" {
		t.Errorf("got source %q, want %q", got, "test")
	}
	// "run" (rank 1, weight 1/2) and "running" (rank 3, weight 1/4) merge
	// into (0, 2, 0, 1)/√5 before normalization.
	run := make([]float32, 4)
	if !v.Vector("run", run) {
		t.Fatal(`no vector for "run"`)
	}
	want := []float32{0, 2 / float32(math.Sqrt(5)), 0, 1 / float32(math.Sqrt(5))}
	for i := range want {
		if math.Abs(float64(run[i]-want[i])) > 0.01 {
			t.Errorf("run[%d]: got %.4f, want %.4f", i, run[i], want[i])
		}
	}
	if got, want := v.Rank("run"), 1; got != want {
		t.Errorf("got rank %d for run, want %d", got, want)
	}
	if got := v.Rank("the"); got != -1 {
		t.Errorf("got rank %d for a stop word, want -1", got)
	}
	dog, cat := make([]float32, 4), make([]float32, 4)
	v.Vector("dog", dog)
	v.Vector("cat", cat)
	if got := dot(dog, cat); math.Abs(got-0.6) > 0.01 {
		t.Errorf("got cos(dog, cat) %.3f, want 0.6", got)
	}
}

func TestConvertMaxWords(t *testing.T) {
	v, st, _ := convertString(t, smallSource, ConvertOptions{MaxWords: 3})
	if got, want := st.Terms, 2; got != want {
		t.Errorf("got %d terms, want %d (run, cat)", got, want)
	}
	if v.Rank("dog") != -1 {
		t.Error("dog (rank 6) kept with MaxWords 3")
	}
}

func TestConvertDeterministic(t *testing.T) {
	_, _, a := convertString(t, smallSource, ConvertOptions{})
	_, _, b := convertString(t, smallSource, ConvertOptions{})
	if !bytes.Equal(a, b) {
		t.Error("two conversions of the same source differ")
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"not json", `hello`, `reading the source: invalid character 'h'`},
		{"not an object", `[1]`, `reading the source: got [, want "{"`},
		{"no vectors", `{"dimensions": 4, "l2NormIndex": 4, "wordIndex": 5}`, `no "vectors" object`},
		{"vectors first", `{"vectors": {}, "dimensions": 4}`, `must precede "vectors"`},
		{"short vector", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, 2, 3]}}`, `vector of "cat" has 3 numbers, want 4`},
		{"bad number", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, 2, 3, x]}}`, `vector of "cat": invalid character 'x'`},
		{"string in a vector", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, 2, 3, "4"]}}`, `vector of "cat": got "\"4\"" in the array, want a number`},
		{"null in a vector", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, 2, 3, null]}}`, `vector of "cat": got "null" in the array, want a number`},
		{"nested array", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, [2], 3, 4]}}`, `vector of "cat": got "[2]" in the array, want a number`},
		{"truncated", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat": [1, 2,`, `unexpected end of input`},
		{"unterminated string", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"cat`, `unexpected end of input`},
		{"only stop words", `{"dimensions": 2, "l2NormIndex": 2, "wordIndex": 3, "vectors": {"the": [1, 0, 1, 0]}}`, `no usable words`},
		{"huge dims", `{"dimensions": 100000}`, `invalid "dimensions"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Convert(strings.NewReader(tc.src), &buf, ConvertOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestConvertSmallReads feeds the source a byte at a time, so every token
// straddles a buffer refill.
func TestConvertSmallReads(t *testing.T) {
	var a, b bytes.Buffer
	if _, err := Convert(strings.NewReader(smallSource), &a, ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(oneByteReader{strings.NewReader(smallSource)}, &b, ConvertOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("byte-at-a-time conversion differs")
	}
}

type oneByteReader struct{ r *strings.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestParseRejectsDamage(t *testing.T) {
	_, _, good := convertString(t, smallSource, ConvertOptions{})
	resum := func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[len(b)-4:], crcOf(b[:len(b)-4]))
		return b
	}
	mutate := func(f func([]byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"foreign", []byte("PK\x03\x04 not ours at all"), "bad magic"},
		{"flipped bit", mutate(func(b []byte) []byte { b[len(b)/2] ^= 1; return b }), "checksum mismatch"},
		{"truncated", good[:len(good)-10], "checksum mismatch"},
		{"other analysis", mutate(func(b []byte) []byte {
			i := bytes.Index(b, []byte(Analysis))
			b[i+len(Analysis)-1] = '9'
			return resum(b)
		}), "rebuild it with `mcproxy embeddings build`"},
		{"huge count", mutate(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], 1<<30)
			return resum(b)
		}), "do not fit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "embeddings", FileName))
	if !errors.Is(err, ErrNotBuilt) {
		t.Errorf("got %v, want ErrNotBuilt", err)
	}
}

func TestLoadDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte("MCPXEMB1 but then nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), path) {
		t.Errorf("got %v, want an error naming %s that is not ErrNotBuilt", err, path)
	}
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
