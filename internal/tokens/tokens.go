// Package tokens counts the tokens a piece of text costs a model, with the
// byte-pair encodings OpenAI publishes for its tokenizers (cl100k_base,
// o200k_base). It exists so every token figure mcproxy reports — the
// profiler's savings, response costs — comes from one counter.
//
// The vocabularies are compiled into the binary (github.com/pkoukk/tiktoken-go-loader):
// the package never downloads anything and never reads a cache directory.
// Text is always counted as ordinary text: a special-token spelling such as
// "<|endoftext|>" inside user data is tokenized like any other characters,
// never treated as a control token and never a reason to panic.
package tokens

import (
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The supported encodings.
const (
	CL100KBase = "cl100k_base" // GPT-4, GPT-3.5-turbo
	O200KBase  = "o200k_base"  // GPT-4o, GPT-4.1, o-series
)

var supported = []string{CL100KBase, O200KBase}

// offline is the only BPE loader this package allows: it reads the ranks
// embedded by tiktoken-go-loader.
var offline tiktoken.BpeLoader = tiktoken_loader.NewOfflineLoader()

func init() {
	// tiktoken-go keeps its loader in a package variable whose default
	// fetches the vocabulary over HTTP. Replacing it at init, before any
	// encoding can be requested, closes that path for the whole program.
	tiktoken.SetBpeLoader(offline)
}

// Counter counts tokens under one encoding. It is safe for concurrent use.
type Counter struct {
	name string
	enc  *tiktoken.Tiktoken
	// split and ranks count ASCII text without tiktoken-go's regular
	// expression (ascii.go).
	split func(s string, fn func(piece string))
	ranks map[string]int
}

// cache holds one *tiktoken.Tiktoken per encoding: building one parses and
// sorts a vocabulary of 100k-200k entries, far too slow to repeat per New.
var cache struct {
	sync.Mutex
	byName map[string]*entry
}

type entry struct {
	once  sync.Once
	enc   *tiktoken.Tiktoken
	ranks map[string]int
	err   error
}

// splitters are the ASCII pre-splits of the encodings (ascii.go).
var splitters = map[string]func(s string, fn func(piece string)){
	CL100KBase: splitCL100K,
	O200KBase:  splitO200K,
}

// New returns a Counter for the named encoding, "cl100k_base" or
// "o200k_base". The first call for an encoding loads its vocabulary (about
// a second); later calls share it.
func New(encoding string) (*Counter, error) {
	if !isSupported(encoding) {
		return nil, fmt.Errorf("tokens: unknown encoding %q (supported: %s)", encoding, strings.Join(supported, ", "))
	}
	cache.Lock()
	if cache.byName == nil {
		cache.byName = make(map[string]*entry)
	}
	e, ok := cache.byName[encoding]
	if !ok {
		e = &entry{}
		cache.byName[encoding] = e
	}
	cache.Unlock()
	e.once.Do(func() {
		e.enc, e.ranks, e.err = load(encoding)
		if e.err != nil {
			e.err = fmt.Errorf("tokens: loading encoding %s: %w", encoding, e.err)
		}
	})
	if e.err != nil {
		return nil, e.err
	}
	return &Counter{name: encoding, enc: e.enc, split: splitters[encoding], ranks: e.ranks}, nil
}

// load builds tiktoken-go's encoder for an encoding from ranks this
// package holds too (tiktoken.GetEncoding would load a copy of its own
// that the ASCII path cannot reach, some 13 MB more at rest). Special
// tokens are left out: text is only ever counted as ordinary text.
func load(encoding string) (*tiktoken.Tiktoken, map[string]int, error) {
	ranks, err := offline.LoadTiktokenBpe("https://openaipublic.blob.core.windows.net/encodings/" + encoding + ".tiktoken")
	if err != nil {
		return nil, nil, err
	}
	bpe, err := tiktoken.NewCoreBPE(ranks, nil, patterns[encoding])
	if err != nil {
		return nil, nil, err
	}
	enc := &tiktoken.Encoding{Name: encoding, PatStr: patterns[encoding], MergeableRanks: ranks}
	return tiktoken.NewTiktoken(bpe, enc, map[string]any{}), ranks, nil
}

// patterns are the encodings' pre-split patterns, as OpenAI publishes them
// (and tiktoken-go spells them).
var patterns = map[string]string{
	CL100KBase: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	O200KBase: strings.Join([]string{
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
		`\p{N}{1,3}`,
		` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
		`\s*[\r\n]+`,
		`\s+(?!\S)`,
		`\s+`,
	}, "|"),
}

func isSupported(encoding string) bool {
	for _, s := range supported {
		if s == encoding {
			return true
		}
	}
	return false
}

// Supported returns the encoding names New accepts.
func Supported() []string { return append([]string(nil), supported...) }

// Name returns the encoding name, e.g. "cl100k_base".
func (c *Counter) Name() string { return c.name }

// Count returns the number of tokens text encodes to, with special-token
// spellings counted as plain text.
//
// The count is exact for ordinary text. tiktoken-go's merge loop is quadratic
// in the length of one pre-tokenized piece, so a single run of thousands of
// letters, spaces or punctuation marks (a base64 blob without digits, a
// padded table, a minified line of "=") would take seconds. Count therefore
// cuts any such run every maxRun runes and counts the parts separately: only
// text with a run that long is affected, and then by a few tokens per cut
// (a cut can split what would have been one merged token).
func (c *Counter) Count(text string) int {
	if text == "" {
		return 0
	}
	n := 0
	for _, part := range splitLongRuns(text, maxRun) {
		n += c.countPart(part)
	}
	return n
}

// countPart counts a part of a text: its lines that are all ASCII on the
// ASCII path (ascii.go), the rest with tiktoken-go. The lines are split at
// line starts, where no piece of either pattern spans (lineStart), so the
// sum is the whole's count.
func (c *Counter) countPart(part string) int {
	if c.split == nil {
		return len(c.enc.EncodeOrdinary(part))
	}
	if isASCII(part) {
		return c.countASCII(part)
	}
	n, seg, segASCII := 0, 0, true
	flush := func(end int) {
		if end > seg {
			if segASCII {
				n += c.countASCII(part[seg:end])
			} else {
				n += len(c.enc.EncodeOrdinary(part[seg:end]))
			}
		}
		seg = end
	}
	for at := 0; at < len(part); {
		next := nextLineStart(part, at)
		if ascii := isASCII(part[at:next]); ascii != segASCII {
			flush(at)
			segASCII = ascii
		}
		at = next
	}
	flush(len(part))
	return n
}

// countASCII counts ASCII text without tiktoken-go's regular expression.
func (c *Counter) countASCII(s string) int {
	n := 0
	c.split(s, func(piece string) { n += bpeCount(c.ranks, piece) })
	return n
}

// nextLineStart is the first line start in s after at, or len(s): a
// position after a newline whose character is neither white space nor
// '/'. Neither encoding's pattern joins a newline to such a character
// (o200k_base joins '/' to the line ends before it), and a long-run split
// never falls there, the class changing.
func nextLineStart(s string, at int) int {
	for {
		j := strings.IndexByte(s[at:], '\n')
		if j < 0 {
			return len(s)
		}
		at += j + 1
		if at >= len(s) {
			return len(s)
		}
		if r, _ := utf8.DecodeRuneInString(s[at:]); r != '/' && !unicode.IsSpace(r) {
			return at
		}
	}
}

// maxRun is the longest same-class run Count hands to the BPE in one piece.
const maxRun = 1024

// runClass groups runes the way the tokenizers' pre-split patterns do:
// letters, whitespace, digits and everything else.
func runClass(r rune) int {
	switch {
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return 1
	case unicode.IsSpace(r):
		return 2
	case unicode.IsNumber(r):
		return 3
	default:
		return 4
	}
}

// splitLongRuns returns text cut inside every run of more than max runes of
// one class; text without such a run comes back whole, as one part.
func splitLongRuns(text string, max int) []string {
	var parts []string
	start, runLen, class := 0, 0, 0
	for i, r := range text {
		k := runClass(r)
		if k != class {
			class, runLen = k, 0
		}
		if runLen == max {
			parts = append(parts, text[start:i])
			start, runLen = i, 0
		}
		runLen++
	}
	return append(parts, text[start:])
}
