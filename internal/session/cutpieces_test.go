package session

import (
	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// linesText builds n random lines of the kinds tool results hold: prose,
// code with indentation, paths, numbers, punctuation runs, CRLF, blank
// lines, non-Latin scripts, emoji and runs long enough for the counter's
// long-run split.
func linesText(rng *rand.Rand, n int) string {
	frags := []string{
		"The quick brown fox", " jumps", "\tindented", "    four spaces", "/usr/local/bin", "//comment", "/", "42", "3.14159",
		"1234567890", "...", "!!", "?", "«quoted»", "日本語のテキスト", "Ünïcödé", "🙂🙂", "a-b_c", "x=1;", "{\"k\": [1, 2]}",
		"'s", "'ll", "don't", "  ", " ", "\r", "#", "==", "<tag>", "é", "\u00a0nbsp", "\u3000ideographic space",
	}
	var b strings.Builder
	for range n {
		switch rng.Intn(12) {
		case 0: // blank line(s)
			b.WriteString(strings.Repeat("\n", rng.Intn(3)))
		case 1: // a long run of one class
			b.WriteString(strings.Repeat(string("a= 9"[rng.Intn(4)]), 900+rng.Intn(400)))
		}
		for k := rng.Intn(8); k >= 0; k-- {
			b.WriteString(frags[rng.Intn(len(frags))])
			if rng.Intn(3) == 0 {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestLineStartAdditive is what piecewise cutting rests on: for both
// encodings, a text's count is the sum of the counts of its two sides at
// every line start (lineStart).
func TestLineStartAdditive(t *testing.T) {
	t.Parallel()
	testAdditive(t, lineStart, 11, 25, 150, func(rng *rand.Rand, _ int) string { return linesText(rng, 30) })
}

// TestWordStartAdditive: for both encodings, a text's count is the sum of
// the counts of its two sides at every word start (wordStart), in texts
// with lines and in the same texts as one JSON string (their newlines
// escaped), which is how a tool call's arguments are recorded.
func TestWordStartAdditive(t *testing.T) {
	t.Parallel()
	testAdditive(t, wordStart, 17, 40, 300, func(rng *rand.Rand, i int) string {
		if i%2 == 1 {
			return jsonText(linesText(rng, 30))
		}
		return linesText(rng, 30)
	})
}

// testAdditive checks, for both encodings, up to 15 random positions where
// at holds in each of n texts from text (seeded with seed), and that at
// least want were checked.
func testAdditive(t *testing.T, at func(s string, i int) bool, seed int64, n, want int, text func(rng *rand.Rand, i int) string) {
	for _, enc := range tokens.Supported() {
		t.Run(enc, func(t *testing.T) {
			c, err := tokens.New(enc)
			if err != nil {
				t.Fatal(err)
			}
			rng := newRand(seed)
			checked := 0
			for k := range n {
				s := text(rng, k)
				whole := c.Count(s)
				var starts []int
				for i := 1; i < len(s); i++ {
					if at(s, i) {
						starts = append(starts, i)
					}
				}
				rng.Shuffle(len(starts), func(a, b int) { starts[a], starts[b] = starts[b], starts[a] })
				for _, i := range starts[:min(len(starts), 15)] {
					checked++
					if a, b := c.Count(s[:i]), c.Count(s[i:]); a+b != whole {
						t.Fatalf("count %d, but %d + %d split at byte %d (%q | %q)", whole, a, b, i, s[max(0, i-20):i], s[i:min(len(s), i+20)])
					}
				}
			}
			if checked < want {
				t.Errorf("checked %d positions, want at least %d", checked, want)
			}
		})
	}
}

// TestPiecewiseCut: with the production tokenizer, an oversize result is
// cut within its budget, and the count the host records for the cut text
// (from its pieces) is its exact count; a text with too few line starts is
// still cut, by bytes.
func TestPiecewiseCut(t *testing.T) {
	c, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions(t)
	opts.Count, opts.CountSplitsAtLines = c.Count, true
	h := openHost(t, opts, "s")
	rng := newRand(3)
	for i, text := range []string{
		linesText(rng, 3000),
		strings.Repeat("x", 30000) + "\n" + linesText(rng, 200), // one long line, then lines
		strings.Repeat("word ", 20000),                          // no line at all
		jsonText(linesText(rng, 3000)),                          // one JSON line: newlines escaped
		strings.Repeat("x", 200000),                             // neither lines nor words
		linesText(rng, 40),                                      // fits
		strings.Repeat("Hello world, this is a line.\n", 300),   // over the limit in bytes, not in tokens
	} {
		rec, err := h.Record(context.Background(), toolCall("fs:read", []byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		turn, err := h.Turn(context.Background(), toolResult(rec[0], text))
		if err != nil {
			t.Fatal(err)
		}
		got := turn.Recorded[0]
		exact := c.Count(got.Text)
		if ref, ok := h.Ref(got.ID); !ok || ref.Tokens != noa.CountMessageTokens(got.CoreMessage, c.Count) {
			t.Errorf("text %d: recorded %d tokens (%v) for a message of %d tokens", i, ref.Tokens, ok, noa.CountMessageTokens(got.CoreMessage, c.Count))
		}
		switch {
		case i >= 5 && got.Original != "":
			t.Errorf("text %d fits (%d tokens) but was cut", i, c.Count(text))
		case i < 5 && (got.Original == "" || exact > opts.MaxResultTokens):
			t.Errorf("text %d: cut %v to %d tokens; want a cut within %d", i, got.Original != "", exact, opts.MaxResultTokens)
		}
	}
}

// jsonText is s as a JSON object's string member, as a call's arguments
// are recorded.
func jsonText(s string) string {
	b, err := json.Marshal(map[string]string{"content": s})
	if err != nil {
		panic(err)
	}
	return string(b)
}
