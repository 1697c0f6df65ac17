package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// ReadArchiveDescription is what the model reads next to read_archive: by
// what to ask (a block id or a message ref, both as the model has seen them)
// and how to page.
const ReadArchiveDescription = "Return archived originals verbatim, by block id (\"b3\", from a summary) " +
	"or message ref (\"m00042\", also a result cut for size). Long ones come in pages; each names the call for the next. " +
	"Or search every archive: {\"query\": \"parse_config settings.py\"} lists the archived lines holding any of the words, " +
	"each with the call that reads from it."

// ReadArchiveSchema is read_archive's input schema.
func ReadArchiveSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"block":  map[string]any{"type": "string"},
			"ref":    map[string]any{"type": "string"},
			"offset": map[string]any{"type": "integer", "minimum": 0},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "description": "Bytes"},
			"query":  map[string]any{"type": "string", "description": "Words to find in every archive, instead of block or ref"},
		},
	}
}

// ReadArchiveArgs are read_archive's arguments: Block or Ref (one of them),
// and a byte range; or Query alone, a search of every archive.
type ReadArchiveArgs struct {
	Block  string
	Ref    string
	Offset int
	Limit  int
	Query  string
}

// ParseReadArchiveArgs decodes read_archive's arguments, accepting numbers
// sent as strings. The error is written for the model.
func ParseReadArchiveArgs(raw []byte) (ReadArchiveArgs, error) {
	var a ReadArchiveArgs
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte("{}")
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, fmt.Errorf(`read_archive's arguments must be a JSON object such as {"block": "b3"} or {"ref": "m00042", "offset": 0}`)
	}
	str := func(k string) (string, error) {
		switch v := m[k].(type) {
		case nil:
			return "", nil
		case string:
			return strings.TrimSpace(v), nil
		default:
			return "", fmt.Errorf("%q must be a string such as %q", k, map[string]string{"block": "b3", "ref": "m00042", "query": "parse_config"}[k])
		}
	}
	num := func(k string) (int, error) {
		switch v := m[k].(type) {
		case nil:
			return 0, nil
		case float64:
			if v < 0 || v != float64(int(v)) {
				return 0, fmt.Errorf("%q must be a whole number of bytes, 0 or more; got %v", k, v)
			}
			return int(v), nil
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%q must be a whole number of bytes, 0 or more; got %q", k, v)
			}
			return n, nil
		default:
			return 0, fmt.Errorf("%q must be a whole number of bytes", k)
		}
	}
	var err error
	if a.Block, err = str("block"); err != nil {
		return a, err
	}
	if a.Ref, err = str("ref"); err != nil {
		return a, err
	}
	if a.Query, err = str("query"); err != nil {
		return a, err
	}
	if a.Query != "" && (a.Block != "" || a.Ref != "") {
		return a, fmt.Errorf(`"query" searches every archive: send it alone, such as {"query": "parse_config"}, then read a hit with the call it names`)
	}
	if a.Offset, err = num("offset"); err != nil {
		return a, err
	}
	if a.Limit, err = num("limit"); err != nil {
		return a, err
	}
	return a, nil
}

// pageBytes is the default page size: about as many bytes as tokens fit in
// a result, which stays under the limit for ordinary text.
func (h *Host) pageBytes() int { return h.opts.MaxResultTokens * 3 }

// Page is one page of an archived original, or a search's answer (Text
// alone, Note empty).
type Page struct {
	// Text is exactly bytes [Start, End) of the original, cut on
	// character boundaries. Concatenating the Texts of the pages from
	// offset 0 gives back the original byte for byte.
	Text string
	// Note says where the page sits and, when more follows, the exact
	// read_archive call for the next page.
	Note string
	// Start, End and Size are byte offsets into the original and its size;
	// End == Size on the last page.
	Start, End, Size int
}

// ReadArchive returns archived originals verbatim, one page at a time: a
// block's archive (a.Block) or the original of one message (a.Ref: its
// ref, or its id for a message without one), from a.Offset, at most a.Limit
// bytes and never more than fits a result. It only reads: recording the
// call and its page is the front's business, like any tool call's.
//
// A call with a.Query is a search instead (SearchArchive).
//
// The error is written for the model: it says how to correct the call.
func (h *Host) ReadArchive(ctx context.Context, a ReadArchiveArgs) (Page, error) {
	if err := ctx.Err(); err != nil {
		return Page{}, err
	}
	if a.Query != "" {
		return h.SearchArchive(ctx, a.Query)
	}
	name, data, err := h.archived(a)
	if err != nil {
		return Page{}, err
	}
	key := `"block":` + strconv.Quote(a.Block)
	if a.Block == "" {
		key = `"ref":` + strconv.Quote(a.Ref)
	}
	size := len(data)
	if a.Offset > size {
		//lint:ignore ST1005 the model reads this text as it is: sentences that say how to correct the call
		return Page{}, fmt.Errorf("offset %d is past the end of %s, which has %d bytes. Use an offset below %d.", a.Offset, name, size, size)
	}
	start := a.Offset
	for start > 0 && start < size && !utf8.RuneStart(data[start]) {
		start-- // never split a character: back up to its first byte
	}
	limit := a.Limit
	if limit <= 0 || limit > h.pageBytes() {
		limit = h.pageBytes()
	}
	end := pageEnd(data, start, limit)
	budget := h.opts.MaxResultTokens - 200
	for range 8 {
		n := h.opts.Count(string(data[start:end]))
		if n <= budget || end-start <= 1 {
			break
		}
		end = pageEnd(data, start, max(1, int(float64(end-start)*float64(budget)/float64(n)*0.95)))
	}
	tool := h.opts.RecallTool()
	note := fmt.Sprintf("[%s %s: bytes %d-%d of %d", tool, name, start, end, size)
	if end < size {
		note += fmt.Sprintf(`; more follows: %s {%s,"offset":%d}]`, tool, key, end)
	} else {
		note += "; end of the archive]"
	}
	return Page{Text: string(data[start:end]), Note: note, Start: start, End: end, Size: size}, nil
}

// pageEnd is start+limit moved back to a character boundary (but at least
// one character past start).
func pageEnd(data []byte, start, limit int) int {
	end := min(len(data), start+limit)
	if end >= len(data) {
		return len(data)
	}
	e := end
	for e > start && !utf8.RuneStart(data[e]) {
		e--
	}
	if e == start {
		_, w := utf8.DecodeRune(data[start:])
		return min(len(data), start+max(w, 1))
	}
	return e
}

// archived finds what a read_archive call names.
func (h *Host) archived(a ReadArchiveArgs) (string, []byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case a.Block != "" && a.Ref != "":
		return "", nil, fmt.Errorf(`give either "block" or "ref", not both`)
	case a.Block != "":
		b := noa.FindBlock(&noa.CompressionState{Blocks: h.blocks}, a.Block)
		if b == nil {
			return "", nil, fmt.Errorf("there is no block %q in this session. %s", a.Block, h.blockList())
		}
		path := filepath.Join(h.arch.Root, filepath.FromSlash(b.ArchiveRel))
		data, err := os.ReadFile(path)
		if err != nil {
			return "", nil, fmt.Errorf("the archive of %s (%s) cannot be read: %v. This is a problem on the host, not in your call", b.BlockID, b.ArchiveRel, err)
		}
		return b.BlockID, data, nil
	case a.Ref != "":
		h.learnRefs()
		id, ok := h.refOf(a.Ref)
		if !ok {
			if _, known := h.index[a.Ref]; known {
				id, ok = a.Ref, true // a protected result is pointed at by its id
			}
		}
		if !ok {
			return "", nil, fmt.Errorf("there is no message %q in this session. Use a ref exactly as a tag, summary or truncation note shows it, such as m00042", a.Ref)
		}
		name := a.Ref
		if rel, cut := h.originals[id]; cut {
			data, err := os.ReadFile(filepath.Join(h.arch.Root, filepath.FromSlash(rel)))
			if err != nil {
				return "", nil, fmt.Errorf("the archived original of %s (%s) cannot be read: %v. This is a problem on the host, not in your call", a.Ref, rel, err)
			}
			return name, data, nil
		}
		return name, []byte(h.msgs[h.index[id]].Text), nil
	default:
		return "", nil, fmt.Errorf(`%s needs "block" (a block id such as "b3", from a summary's archive line), "ref" (a message ref such as "m00042") or "query" (words to find in every archive). %s`, h.opts.RecallTool(), h.blockList())
	}
}

func (h *Host) blockList() string {
	if len(h.blocks) == 0 {
		return "This session has no compressed blocks yet."
	}
	ids := make([]string, 0, len(h.blocks))
	for _, b := range h.blocks {
		ids = append(ids, b.BlockID)
	}
	sort.SliceStable(ids, func(i, j int) bool { return len(ids[i]) < len(ids[j]) || len(ids[i]) == len(ids[j]) && ids[i] < ids[j] })
	if len(ids) > 30 {
		ids = append(ids[:30], "...")
	}
	return "Blocks in this session: " + strings.Join(ids, ", ") + "."
}

// refOf resolves a ref, in any form noa accepts, to its message id.
func (h *Host) refOf(ref string) (string, bool) {
	return noa.RawForRef(noa.MessageRefMap{ByRef: h.refs}, ref)
}
