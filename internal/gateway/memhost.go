package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// MemoryHosts keeps every conversation's noa host in memory: the reference
// implementation of Hosts, for tests and for a gateway without a data
// directory. Nothing survives the process; mcproxy serve uses the on-disk
// hosts of internal/session instead.
type MemoryHosts struct {
	// Config is noa's configuration; ModelContextLimit is replaced by each
	// conversation's window. The zero value means noa.DefaultConfig.
	Config noa.Config
	// Count measures tokens; nil means CountTokens(nil). Counts are
	// memoised by text, as noa measures every message on every turn.
	Count noa.TokenCountFn
	// Now is the clock for block timestamps; nil means time.Now.
	Now func() time.Time

	mu    sync.Mutex
	hosts map[string]*memHost
	count noa.TokenCountFn // Count, memoised
}

// Host opens conversation id, creating it empty.
func (m *MemoryHosts) Host(_ context.Context, id string, contextLimit int) (Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hosts == nil {
		m.hosts = map[string]*memHost{}
	}
	h, ok := m.hosts[id]
	if !ok {
		h = m.newHost(id, contextLimit)
		m.hosts[id] = h
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg = h.paced(contextLimit)
	return h, nil
}

// Peek projects pending as if recorded in conversation id (a new one when
// id is "" or unknown), changing and creating nothing.
func (m *MemoryHosts) Peek(_ context.Context, id string, contextLimit int, pending []noa.CoreMessage) (Turn, error) {
	m.mu.Lock()
	h, ok := m.hosts[id]
	if !ok || id == "" {
		h = m.newHost(id, contextLimit)
	}
	m.mu.Unlock()
	return h.peek(pending, contextLimit), nil
}

// newHost is an empty conversation paced against contextLimit. The
// caller holds m.mu.
func (m *MemoryHosts) newHost(id string, contextLimit int) *memHost {
	if m.count == nil {
		base := m.Count
		if base == nil {
			base = CountTokens(nil)
		}
		m.count = memoCount(base)
	}
	count, now := m.count, m.Now
	if now == nil {
		now = time.Now
	}
	h := &memHost{id: id, base: m.Config, count: count, now: now, has: map[string]bool{},
		st: noa.CreateInitialState(id, "mem://"+id), arch: memArchive{}}
	h.cfg = h.paced(contextLimit)
	return h
}

// paced is noa's configuration for a window of contextLimit tokens (0:
// the current one): the base configuration with that window, or
// noa.DefaultConfig for it when there is no base.
func (h *memHost) paced(contextLimit int) noa.Config {
	if contextLimit <= 0 {
		contextLimit = h.cfg.ModelContextLimit
	}
	switch {
	case contextLimit > 0 && contextLimit == h.cfg.ModelContextLimit:
		return h.cfg
	case h.base.ModelContextLimit == 0:
		return noa.DefaultConfig(contextLimit)
	}
	cfg := h.base
	if contextLimit > 0 {
		cfg.ModelContextLimit = contextLimit
	}
	return cfg
}

// memoLimit bounds a token memo; past it the memo starts afresh.
const memoLimit = 1 << 16

// memoCount wraps count with a memo of counted texts, safe for concurrent
// use.
func memoCount(count noa.TokenCountFn) noa.TokenCountFn {
	var mu sync.Mutex
	memo := map[string]int{}
	return func(text string) int {
		if len(text) < 64 {
			return count(text) // cheaper than the lock
		}
		mu.Lock()
		n, ok := memo[text]
		mu.Unlock()
		if ok {
			return n
		}
		n = count(text)
		mu.Lock()
		if len(memo) >= memoLimit {
			memo = map[string]int{}
		}
		memo[text] = n
		mu.Unlock()
		return n
	}
}

// Tools are Compress (noa's definition) and read_archive.
func (m *MemoryHosts) Tools() []ToolDef {
	schema, _ := json.Marshal(noa.CompressToolSchema())
	return []ToolDef{
		{Name: noa.CompressToolName, Description: noa.CompressToolDescription, Schema: schema},
		{Name: ReadArchiveTool, Description: "Return archived originals verbatim: the text a compressed block replaced " +
			`(block: its id, e.g. "b3") or one message's original (ref: e.g. "m00042").`,
			Schema: json.RawMessage(`{"type":"object","properties":{"block":{"type":"string"},"ref":{"type":"string"},` +
				`"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1,"description":"Bytes"}}}`)},
	}
}

// ReadArchiveTool is the name of noa's recall tool.
const ReadArchiveTool = "read_archive"

// memArchive holds block archives by path.
type memArchive map[string][]byte

func (a memArchive) Write(tier noa.Tier, blockID, startRef, endRef string, content []byte) (string, string, error) {
	rel := noa.ArchiveTierDir(tier) + "/" + noa.ArchiveFileName(blockID, startRef, endRef)
	a["mem://"+rel] = append([]byte(nil), content...)
	return "mem://" + rel, rel, nil
}

func (a memArchive) Remove(abs string) error { delete(a, abs); return nil }

type memHost struct {
	id    string
	base  noa.Config // MemoryHosts.Config
	count noa.TokenCountFn
	now   func() time.Time

	mu   sync.Mutex
	cfg  noa.Config
	msgs []noa.CoreMessage
	has  map[string]bool
	st   noa.CompressionState
	arch memArchive
	// engaged: Engage was called.
	engaged bool
}

func (h *memHost) Has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.has[id]
}

func (h *memHost) Messages() []noa.CoreMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]noa.CoreMessage(nil), h.msgs...)
}

func (h *memHost) Record(_ context.Context, msgs ...noa.CoreMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range msgs {
		if m.ID == "" || h.has[m.ID] {
			return fmt.Errorf("recording message %q: empty or already recorded", m.ID)
		}
		h.has[m.ID] = true
		h.msgs = append(h.msgs, m)
	}
	return nil
}

func (h *memHost) sum(msgs []noa.CoreMessage) int {
	n := 0
	for _, m := range msgs {
		n += noa.CountMessageTokens(m, h.count)
	}
	return n
}

func (h *memHost) Turn(context.Context) (Turn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, st := h.turn(h.msgs, h.st, h.cfg)
	h.st = st
	return t, nil
}

// turn runs noa over msgs from state st with cfg: the Turn and the state
// after it. It changes nothing of h's; the caller holds h.mu.
func (h *memHost) turn(msgs []noa.CoreMessage, st noa.CompressionState, cfg noa.Config) (Turn, noa.CompressionState) {
	r := noa.ProcessTurn(noa.ProcessTurnInput{Messages: msgs, State: st, Config: cfg, CountTokens: h.count})
	t := Turn{Refs: map[string]Ref{}, SystemPrompt: noa.BuildSystemPrompt(noa.Sections{}), Tokens: h.sum(msgs), Limit: cfg.ModelContextLimit, Engaged: h.engaged}
	for _, m := range r.Messages {
		if m.ID == noa.NudgeMessageID {
			t.Nudge = m.Text
			continue
		}
		t.View = append(t.View, m)
		if ref, ok := noa.RefForRaw(r.State.MessageRefs, m.ID); ok {
			t.Refs[m.ID] = Ref{Ref: ref, Tokens: r.State.TokenSnapshot[ref]}
		}
	}
	t.Projected = h.sum(t.View)
	if r.Nudge != nil {
		t.Ranges = r.Nudge.CompressibleRanges
	}
	return t, r.State
}

// peek is the Turn with the messages of pending h does not hold recorded
// after its own, paced as Host(contextLimit) would pace it, changing
// nothing.
func (h *memHost) peek(pending []noa.CoreMessage, contextLimit int) Turn {
	h.mu.Lock()
	defer h.mu.Unlock()
	cfg := h.paced(contextLimit)
	msgs := append([]noa.CoreMessage(nil), h.msgs...)
	for _, m := range pending {
		if !h.has[m.ID] {
			msgs = append(msgs, m)
		}
	}
	t, _ := h.turn(msgs, h.st, cfg)
	return t
}

func (h *memHost) Engage(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.engaged = true
	return nil
}

func resultOf(call noa.CoreMessage, text string) noa.CoreMessage {
	return noa.CoreMessage{ID: call.ID + "/result", Role: noa.RoleTool, ContentType: noa.CTToolResult,
		ToolName: call.ToolName, ToolCallID: call.ToolCallID, Text: text}
}

func (h *memHost) Compress(_ context.Context, call noa.CoreMessage) (noa.CoreMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	view := noa.ProjectView(h.msgs, h.st, h.cfg)
	parsed := noa.ParseCompressArgs([]byte(call.Text))
	var ar noa.ApplyResult
	if d := parsed.Diagnostics; !d.Ok && !(d.Kind == noa.ParseNoValidRanges && d.InvalidItems == 0) {
		ar = noa.ApplyResult{State: h.st, Errors: []string{fmt.Sprintf(
			`the arguments could not be used (%s); nothing was compressed. Call Compress with {"content": [{"start": "m00012", "end": "m00040", "summary": "...", "topic": "..."}]}`, d.Kind)}}
	} else {
		now := h.now()
		ar = noa.ApplyCompression(noa.ApplyInput{Ranges: parsed.Ranges, Messages: view, State: h.st, Config: h.cfg,
			CallID: call.ToolCallID, Archiver: h.arch, CreatedAt: now.UTC().Format(time.RFC3339), Now: now.Unix(), CountTokens: h.count})
	}
	after := noa.ProjectView(h.msgs, ar.State, h.cfg)
	panel := noa.FormatPanel(noa.PanelInput{Result: ar, BeforeTokens: h.sum(view), AfterTokens: h.sum(after), Messages: after})
	res := resultOf(call, panel)
	h.st = ar.State
	for _, m := range []noa.CoreMessage{call, res} {
		h.has[m.ID] = true
		h.msgs = append(h.msgs, m)
	}
	return res, nil
}

// page is bytes [offset, offset+limit) of text (limit 0: to the end),
// moved onto character boundaries: what a cut's read_archive call names.
func page(text string, offset, limit int) string {
	start := min(offset, len(text))
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start--
	}
	end := len(text)
	if limit > 0 {
		end = min(end, start+limit)
	}
	for end < len(text) && end > start && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[start:end]
}

func (h *memHost) ReadArchive(_ context.Context, call noa.CoreMessage) (noa.CoreMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var args struct {
		Block  string `json:"block"`
		Ref    string `json:"ref"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	text := ""
	if err := json.Unmarshal([]byte(call.Text), &args); err != nil || args.Offset < 0 || args.Limit < 0 {
		text = `read_archive's arguments must be a JSON object such as {"block": "b3"} or {"ref": "m00042", "offset": 0, "limit": 4000}`
	} else if args.Block != "" {
		if b := noa.FindBlock(&h.st, args.Block); b != nil {
			text = page(string(h.arch[b.ArchivePath]), args.Offset, args.Limit)
		} else {
			text = fmt.Sprintf("no block %q: name one from a summary's archive line, e.g. \"b3\"", args.Block)
		}
	} else {
		// A ref, or the id a cut of a message without a ref names.
		ref := strings.TrimSpace(args.Ref)
		raw, ok := noa.RawForRef(h.st.MessageRefs, ref)
		if !ok && h.has[ref] {
			raw, ok = ref, true
		}
		text = fmt.Sprintf("no message %q: give a block (\"b3\") or a ref (\"m00042\")", args.Ref)
		for _, m := range h.msgs {
			if ok && m.ID == raw {
				text = page(m.Text, args.Offset, args.Limit)
			}
		}
	}
	res := resultOf(call, text)
	for _, m := range []noa.CoreMessage{call, res} {
		h.has[m.ID] = true
		h.msgs = append(h.msgs, m)
	}
	return res, nil
}
