package tokens

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
)

// regexPieces is what the pattern splits s into.
func regexPieces(t testing.TB, pattern, s string) []string {
	re := regexp2.MustCompile(pattern, regexp2.None)
	var out []string
	m, err := re.FindStringMatch(s)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		out = append(out, m.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// asciiText is random ASCII from fragments that exercise every
// alternative of both patterns: contractions in both cases, capitals
// before and after lower case, digit runs, punctuation before letters,
// line ends after marks and '/', runs of mixed white space, control bytes.
func asciiText(r *rand.Rand, n int) string {
	frags := []string{
		"the", "The", "THE", "HELLOworld", "helloWorld", "don't", "DON'T", "we're", "They'LL", "'s", "'S", "'re", "'x", "'",
		"12345", "7", " 42", "3.14", "...", "!\n", "?\r\n", "/", "//", ".\n/", "a/b", "{\"k\": [1, 2]}", "<tag>",
		" ", "  ", "   ", "\t", "\n", "\n\n", " \n ", "\r", "\v", "\f", "\x00", "\x1f", "\x7f", "_", "-x", " -", "#", "=",
	}
	var b strings.Builder
	for range n {
		b.WriteString(frags[r.IntN(len(frags))])
	}
	return b.String()
}

// TestASCIISplit: on random ASCII, each encoding's byte-class split gives
// exactly the pieces its regular expression gives.
func TestASCIISplit(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 7))
	for enc, split := range splitters {
		t.Run(enc, func(t *testing.T) {
			for range 2000 {
				s := asciiText(r, 1+r.IntN(30))
				var got []string
				split(s, func(p string) { got = append(got, p) })
				if want := regexPieces(t, patterns[enc], s); !slices.Equal(got, want) {
					t.Fatalf("split(%q) = %q, want %q", s, got, want)
				}
			}
		})
	}
}

// TestASCIICountMatchesTiktoken: the ASCII path's count is tiktoken-go's
// count, text by text, for both encodings (prose, code, JSON, random
// fragments, long runs, and ASCII lines among lines of other scripts).
func TestASCIICountMatchesTiktoken(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 8))
	texts := []string{
		strings.Repeat("The quick brown fox jumps over the lazy dog; 0123456789 abcdefghij.\n", 300),
		`{"path":"/tmp/a.txt","content":"line of a file,\n\tindented; 0123456789.\nDON'T \"quote\" it"}`,
		"func main() {\n\tfmt.Println(\"hi\") // comment\n}\n",
		strings.Repeat("=", 5000) + strings.Repeat("ab", 3000) + strings.Repeat(" ", 2000) + "x",
	}
	for range 300 {
		texts = append(texts, asciiText(r, 1+r.IntN(200)))
	}
	// Mixed: lines of other scripts among ASCII ones, counted line by line.
	other := []string{"日本語のテキスト\n", "Ünïcödé — ẞ ß\n", "🎉👍🏽 ok\n", "\u00a0nbsp\n", "é/é\n/x\n"}
	for range 200 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			if r.IntN(2) == 0 {
				b.WriteString(other[r.IntN(len(other))])
			} else {
				b.WriteString(asciiText(r, 1+r.IntN(20)))
			}
		}
		texts = append(texts, b.String())
	}
	texts = append(texts, benchText())
	for _, enc := range Supported() {
		t.Run(enc, func(t *testing.T) {
			c, err := New(enc)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range texts {
				if got, want := c.Count(s), tiktokenCount(c, s); got != want {
					t.Fatalf("Count(%.60q) = %d, want tiktoken-go's %d", s, got, want)
				}
			}
		})
	}
}

// tiktokenCount is Count without the ASCII path.
func tiktokenCount(c *Counter, s string) int {
	slow := *c
	slow.split = nil
	return slow.Count(s)
}

// FuzzASCIICount: for any input, Count equals tiktoken-go's count.
func FuzzASCIICount(f *testing.F) {
	for _, s := range []string{"Hello, world!", "don't STOP'S\n\n  x", "a\r\n/b", "  \t\v\fq", "123456 7", "'RE'll"} {
		f.Add(s)
	}
	counters := allCounters(f)
	f.Fuzz(func(t *testing.T, s string) {
		for enc, c := range counters {
			if got, want := c.Count(s), tiktokenCount(c, s); got != want {
				t.Errorf("%s: Count(%q) = %d, want %d", enc, s, got, want)
			}
		}
	})
}

// allCounters is a Counter for every supported encoding, by name.
func allCounters(t testing.TB) map[string]*Counter {
	t.Helper()
	counters := map[string]*Counter{}
	for _, name := range Supported() {
		c, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		counters[name] = c
	}
	return counters
}

// TestLoadMatchesGetEncoding: the encoder load builds (from this
// package's ranks and patterns) counts as tiktoken-go's own GetEncoding
// does, on ASCII and mixed texts.
func TestLoadMatchesGetEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 9))
	texts := []string{benchText(), "<|endoftext|> is text here"}
	for range 100 {
		texts = append(texts, asciiText(r, 1+r.IntN(100))+"日本語 Ünïcödé 🎉\n"+asciiText(r, 1+r.IntN(20)))
	}
	for _, enc := range Supported() {
		t.Run(enc, func(t *testing.T) {
			theirs, err := tiktoken.GetEncoding(enc)
			if err != nil {
				t.Fatal(err)
			}
			ours, _, err := load(enc)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range texts {
				if got, want := len(ours.EncodeOrdinary(s)), len(theirs.EncodeOrdinary(s)); got != want {
					t.Fatalf("%.60q: %d tokens, tiktoken-go's GetEncoding gives %d", s, got, want)
				}
			}
		})
	}
}
