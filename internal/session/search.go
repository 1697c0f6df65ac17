package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Search bounds: an answer names at most searchHits lines, each clipped to
// searchLineBytes around its first match, and at most searchTerms terms
// are looked for. They keep a search answer small (about 2K tokens) next to
// the pages it points at.
const (
	searchHits      = 20
	searchLineBytes = 240
	searchTerms     = 8
	// searchReadBytes is the limit a hit's call reads with: the lines
	// around it, not a whole page.
	searchReadBytes = 3000
)

// searchable is one archived text a search looks through: a block's
// archive or a cut message's original, with the read_archive key that reads
// it.
type searchable struct {
	name string // "b3" or a ref such as "m00042"
	key  string // `"block":"b3"` or `"ref":"m00042"`
	data []byte
}

// hit is one line that holds at least one term.
type hit struct {
	src    int // index into the searchables
	offset int // byte offset of the line in its text
	line   string
	terms  int // distinct terms the line holds
}

// SearchArchive looks through every archived original of the session (each
// compressed block's archive and each original of a result cut for size)
// for lines holding any of query's terms (split on white space, matched
// case-insensitively), and answers with the best lines: those holding the
// most terms first, then the newest archive first, each with the exact
// read_archive call that reads from it. It only reads.
//
// A model that no longer has a fact in view finds where it went without
// reading every archive page by page. The error is written for the model.
func (h *Host) SearchArchive(ctx context.Context, query string) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	terms := searchTermsOf(query)
	if len(terms) == 0 {
		return Page{}, fmt.Errorf(`"query" needs a word to look for, such as {"query": "parse_config"}; several words find lines holding any of them`)
	}
	srcs, err := h.searchables()
	if err != nil {
		return Page{}, err
	}
	tool := h.opts.RecallTool()
	if len(srcs) == 0 {
		return Page{Text: fmt.Sprintf("[%s: nothing is archived in this session yet; everything said so far is in view]", tool)}, nil
	}
	lower := make([][]byte, len(terms))
	for i, t := range terms {
		lower[i] = []byte(strings.ToLower(t))
	}
	var hits []hit
	perTerm := make([]int, len(terms))
	for si, s := range srcs {
		if err := ctx.Err(); err != nil {
			return Page{}, err
		}
		for off := 0; off < len(s.data); {
			end := bytes.IndexByte(s.data[off:], '\n')
			if end < 0 {
				end = len(s.data)
			} else {
				end += off
			}
			line := s.data[off:end]
			ll := bytes.ToLower(line)
			n, first := 0, -1
			for ti, t := range lower {
				if i := bytes.Index(ll, t); i >= 0 {
					n++
					perTerm[ti]++
					if first < 0 || i < first {
						first = i
					}
				}
			}
			if n > 0 {
				hits = append(hits, hit{src: si, offset: off, line: clip(line, first), terms: n})
			}
			off = end + 1
		}
	}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "[%s: no archived line holds %s. Archived: %s. Try another word, or read one with %s {\"block\":\"b1\"}]",
			tool, quoteTerms(terms), names(srcs), tool)
		return Page{Text: b.String()}, nil
	}
	// Most terms first; then the newest archive, then document order.
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].terms != hits[j].terms {
			return hits[i].terms > hits[j].terms
		}
		if hits[i].src != hits[j].src {
			return hits[i].src > hits[j].src
		}
		return hits[i].offset < hits[j].offset
	})
	shown := hits
	if len(shown) > searchHits {
		shown = shown[:searchHits]
	}
	fmt.Fprintf(&b, "[%s: %d archived lines hold %s", tool, len(hits), quoteTerms(terms))
	if len(shown) < len(hits) {
		fmt.Fprintf(&b, "; the best %d follow, add a word to narrow", len(shown))
	}
	b.WriteString(". Each line names the call that reads on from it.]\n")
	for _, x := range shown {
		s := srcs[x.src]
		fmt.Fprintf(&b, "%s {%s,\"offset\":%d,\"limit\":%d}: %s\n", tool, s.key, x.offset, searchReadBytes, x.line)
	}
	var missing []string
	for i, n := range perTerm {
		if n == 0 {
			missing = append(missing, terms[i])
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "[no archived line holds %s]\n", quoteTerms(missing))
	}
	return Page{Text: strings.TrimRight(b.String(), "\n")}, nil
}

// searchTermsOf splits a query into its distinct terms, at most
// searchTerms of them.
func searchTermsOf(q string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range strings.Fields(q) {
		k := strings.ToLower(t)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, t)
		if len(out) == searchTerms {
			break
		}
	}
	return out
}

// searchables are the session's archived texts, the oldest first: block
// archives in the order the blocks were made, then the cut originals in
// the order their messages were recorded.
func (h *Host) searchables() ([]searchable, error) {
	h.mu.Lock()
	blocks := append([]noa.CompressionBlock(nil), h.blocks...)
	type orig struct {
		name, rel string
		pos       int
	}
	var origs []orig
	byID := map[string]string{}
	for ref, id := range h.refs {
		byID[id] = ref
	}
	for id, rel := range h.originals {
		name := id
		if ref, ok := byID[id]; ok {
			name = ref
		}
		origs = append(origs, orig{name: name, rel: rel, pos: h.index[id]})
	}
	root := h.arch.Root
	h.mu.Unlock()
	sort.Slice(origs, func(i, j int) bool { return origs[i].pos < origs[j].pos })

	var out []searchable
	for _, b := range blocks {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(b.ArchiveRel)))
		if err != nil {
			return nil, fmt.Errorf("the archive of %s (%s) cannot be read: %v. This is a problem on the host, not in your call", b.BlockID, b.ArchiveRel, err)
		}
		out = append(out, searchable{name: b.BlockID, key: `"block":` + strconv.Quote(b.BlockID), data: data})
	}
	for _, o := range origs {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(o.rel)))
		if err != nil {
			return nil, fmt.Errorf("the archived original of %s (%s) cannot be read: %v. This is a problem on the host, not in your call", o.name, o.rel, err)
		}
		out = append(out, searchable{name: o.name, key: `"ref":` + strconv.Quote(o.name), data: data})
	}
	return out, nil
}

// clip is line cut to searchLineBytes around byte at, on character
// boundaries, with "…" where it was cut, and its tabs and carriage returns
// made spaces.
func clip(line []byte, at int) string {
	start, end := 0, len(line)
	if end > searchLineBytes {
		start = max(0, at-searchLineBytes/3)
		end = min(len(line), start+searchLineBytes)
		start = max(0, end-searchLineBytes)
		for start > 0 && !utf8.RuneStart(line[start]) {
			start++
		}
		for end < len(line) && !utf8.RuneStart(line[end]) {
			end--
		}
	}
	s := strings.NewReplacer("\t", " ", "\r", " ").Replace(string(line[start:end]))
	if start > 0 {
		s = "…" + s
	}
	if end < len(line) {
		s += "…"
	}
	return s
}

func quoteTerms(terms []string) string {
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, " or ")
}

func names(srcs []searchable) string {
	var n []string
	for i, s := range srcs {
		if i == 12 {
			n = append(n, "...")
			break
		}
		n = append(n, s.name)
	}
	return strings.Join(n, ", ")
}
