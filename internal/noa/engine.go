package noa

import (
	"strings"
	"unicode/utf8"
)

// This file is one piece on purpose: the Engine's caches (per-message counts
// and protection, refs, the projected view with its running totals, the
// range pass's checkpoint, block costs) must change together on every
// Append, Compress and SetState, and their invariants are easier to check
// side by side than across files. The stages it shares with ProcessTurn
// live in their own files (ranges.go, protect.go, nudge.go, prune.go).

// Engine runs ProcessTurn over one session incrementally. A host keeps one
// per session, appends each message once and asks for a turn; the engine
// keeps what ProcessTurn would recompute from the whole history every time:
//
//   - each message's token count (taken once, when the engine first sees
//     the message: in NewEngine or at the next sync; the counter is never
//     asked about that message again), its rune count and its protection;
//   - the refs and frozen token snapshots, extended with the new messages;
//   - the projected view (ProjectView) with the facts of each entry and the
//     running token total, extended with the new messages;
//   - the pass that finds compressible ranges, checkpointed shortly before
//     the recent zone so each turn resumes it there;
//   - the live blocks' summaries and their costs, and the nudge breakdown.
//
// Cost. After k appended messages a turn costs O(k) plus O(z), z being the
// recent (soft-protected) zone and the short stretch before it that the
// range pass resumes from; it does not grow with the history. (When the
// newest messages fill fewer tokens than PreserveRecentTokens, the zone's
// walk also passes over the block summaries before them, which the view
// shows anyway.) These calls cost O(n) in the size of the history or the
// view, once each:
//   - NewEngine (the history is counted once; a warm start);
//   - a turn after Compress created blocks or after SetState (the view is
//     rebuilt from the cached facts, without counting tokens again), and a
//     turn after a Compress call or its answer was appended (the Compress
//     calls still shown may change anywhere in the view), or a tool call
//     that reuses a call id or answers a result recorded before it;
//   - a turn that carries a nudge: its ranges are merged from every
//     compressible range of the view (recommend). Nudges are spaced by NudgeGrowthFloor
//     and pause after MaxCompressAttempts, so these turns are rare;
//   - a turn at or above Truncate.Threshold, or whose view with its
//     overhead would not fit the window: emergency truncation copies
//     the view to cut it and the ranges are measured on the cut copy;
//   - Compress (ApplyCompression itself is linear in the view) and State
//     (a deep copy).
//
// Memory: a copy of the history's message headers (the texts are shared)
// and some hundred bytes of facts and map entries per message.
//
// Equality. Every result equals ProcessTurn's (and ProjectView's, and
// ApplyCompression's) for the same history, state and batches of new
// messages: a ref is assigned when the engine syncs (Turn, View, Compress,
// Ref, State, ProjectedTokens), to the messages appended since the last sync,
// as one ProcessTurn over the whole history would. A history whose messages
// do not have unique, non-empty ids (which noa addresses messages by) is
// served by the full computation on every call: correct, and O(n).
//
// The engine owns copies of what it is given, and the views it returns
// share one backing array (see TurnResult.View): callers must not modify
// them. An Engine is not safe for concurrent use.
type Engine struct {
	cfg   Config
	count TokenCountFn
	st    CompressionState

	hist   []CoreMessage
	hinfo  []msgFacts // facts of hist[i], for i < len(hinfo)
	synced int        // hist[:synced] have been offered refs
	resync bool       // SetState: offer refs to the whole history again

	ids map[string]struct{} // ids of hist[:len(hinfo)]
	// reference: ids are not unique or some are empty; every call runs the
	// full computation.
	reference bool
	// histProt: call ids of hard-protected calls in hist[:len(hinfo)]; a
	// result answering one is hard-protected too (hardProtectedIDs).
	histProt map[string]bool
	// compressIDs: call ids of every Compress call in the history.
	compressIDs map[string]bool

	// The projection of hist[:projected] under st, and what extending it
	// needs. dirty: st's blocks changed since it was built.
	dirty     bool
	built     bool
	projected int
	view      []CoreMessage
	vinfo     []viewFacts
	total     int // the tokens of view
	cats      [nCategories]categorySum
	lastUser  int // index in view of the latest user text, -1 if none
	// first is firstUserSpan of the view; firstOpen: the span ends the
	// view, so the next entry may extend it.
	first     [2]int
	firstOpen bool
	cover     map[string]string // message id -> active block covering it
	// hiddenCalls: call ids of tool calls a block covers; calls: call ids of
	// the tool calls left after pruning (before Compress calls are hidden);
	// orphans: call ids of history results not in the view; viewProt: call
	// ids of hard-protected calls in the view.
	hiddenCalls, calls, orphans, viewProt map[string]bool

	tier    nudgeFacts // the block part, for the live blocks
	spans   []BlockSpan
	summary map[string]int  // rendered summary text -> tokens
	stubs   map[int]stubbed // history index of a Compress call -> stubbed arguments

	// The compressible-range pass: ranges and prot hold the runs it closed
	// (checkpoints record how many were closed before them).
	ranges []RangeInfo
	prot   []ProtectedRange
	breaks []int
	cps    []checkpoint
	margin int // checkpointMargin; tests lower it to stress the checkpoints
	// reserve is truncateReserve, taken at the first turn; -1 before.
	reserve int

	work engineWork
}

// engineWork counts what the engine did, so tests can tell the incremental
// paths were taken.
type engineWork struct {
	extends, rebuilds int
	// resumed: range passes resumed from a checkpoint; scannedFrom0: passes
	// from the start of the view; scanned: entries stepped over in total.
	resumed, scannedFrom0, scanned int
}

// EngineInput starts an Engine.
type EngineInput struct {
	// Messages: the history so far (a host's transcript on open), which
	// the engine copies. Refs are synced for it at the first turn.
	Messages []CoreMessage
	// State: the session's state (for example from RebuildStateFromLog);
	// copied.
	State  CompressionState
	Config Config
	// CountTokens, if non-nil, replaces the default token estimate. It must
	// give the same count for the same text every time.
	CountTokens TokenCountFn
}

// TurnResult is one turn of an Engine: ProcessTurnResult with the state
// kept inside the engine and the nudge beside the view instead of in it.
type TurnResult struct {
	// View is the projected history the model should read this turn,
	// emergency truncation applied and the nudge left out. Outside a
	// truncation it shares its backing array with the engine and with
	// every View returned before the next rebuild (its capacity ends at
	// its length, so appending to it copies). Nobody may modify it.
	View []CoreMessage
	// Nudge is the nudge injected this turn, or nil; NudgeText is its
	// rendered text ("" when none), the message ProcessTurn appends.
	Nudge     *NudgeDecision
	NudgeText string
	// TruncatedCount: messages shortened by emergency truncation.
	TruncatedCount int
	// Tokens is the context size the turn was judged by: the tokenCount
	// given to Turn, or ProjectedTokens when that was not positive.
	Tokens int
	// ProjectedTokens is the size of the projected view before truncation
	// (ProjectedTokenCount); ViewTokens is the size of View.
	ProjectedTokens int
	ViewTokens      int
}

// Messages is what ProcessTurn returns as its view: View, followed by the
// nudge message when there is one. With a nudge it is a fresh slice (an
// O(n) copy; nudges are rare), otherwise View itself.
func (r TurnResult) Messages() []CoreMessage {
	if r.Nudge == nil {
		return r.View
	}
	out := make([]CoreMessage, len(r.View), len(r.View)+1)
	copy(out, r.View)
	return append(out, nudgeMessage(r.NudgeText))
}

// CompressInput is one Compress call for Engine.Compress: ApplyInput
// without what the engine supplies (view, state, config, counter).
type CompressInput struct {
	Ranges []CompressRange
	// CallID identifies the tool_use that carried this call.
	CallID string
	// Archiver must be non-nil: no block is made without saving its source.
	Archiver Archiver
	// CreatedAt (RFC3339) and Now (Unix seconds) name one moment.
	CreatedAt string
	Now       int64
}

// msgFacts are what the engine knows of a history message.
type msgFacts struct {
	tokens int // CountMessageTokens with the engine's counter
	chars  int // runes of Text
	// defTokens: CountMessageTokens with DefaultCountTokens, -1 until
	// needed (only for messages without a frozen snapshot).
	defTokens     int
	synthetic     bool
	protected     bool // IsMessageProtected
	neverPreserve bool
	fence         bool // Text holds a code fence
	marker        bool // Text holds the truncation marker
}

// viewFacts are what the engine knows of a view entry.
type viewFacts struct {
	src           int // index in the history, -1 for a summary
	tokens, chars int
	snap          int    // snapshotTokens
	ref           string // "" for summaries and unaddressable messages
	hard          bool   // hard-protected within the view (hardProtectedIDs)
	synthetic     bool
	neverPreserve bool
	marker        bool
	cat           category
}

// stubbed is a Compress call's arguments with the summaries cut
// (stubCompressArgs), and their facts.
type stubbed struct {
	text                     string
	tokens, chars, defTokens int
	fence, marker            bool
}

// category is a bucket of ComputeContextBreakdown.
type category int8

const (
	catSummaries category = iota
	catTool
	catSystem
	catCode
	catText
	nCategories
)

var categoryNames = [nCategories]string{"summaries", "tool", "system", "code", "text"}

type categorySum struct{ n, tokens int }

// checkpoint is the range pass stopped before view index pos. It can be
// resumed while nothing before pos changed its soft protection: the recent
// zone starts at pos or later, and the latest user message before pos (the
// only other soft-protected message) is still lastUser (-1: none before
// pos).
type checkpoint struct {
	pos, lastUser           int
	first                   [2]int    // the first user message when it was taken
	scan                    rangeScan // ranges, prot and breaks nil; pcur owned
	nRanges, nProt, nBreaks int
}

// checkpointMargin: checkpoints are taken this many entries before the
// first soft-protected one, so a zone that reaches back a little (a late
// tool result pulling in its call) does not void them.
const checkpointMargin = 2 * ToolPairMaxScan

// NewEngine starts an engine over a history and its state. It counts every
// message's tokens once (O(n)); the refs and the view follow at the first
// call that needs them.
func NewEngine(in EngineInput) *Engine {
	e := &Engine{
		cfg:         in.Config,
		count:       countFn(in.CountTokens),
		st:          CloneState(in.State),
		hist:        cloneMessages(in.Messages),
		ids:         make(map[string]struct{}, len(in.Messages)),
		histProt:    map[string]bool{},
		compressIDs: map[string]bool{},
		summary:     map[string]int{},
		stubs:       map[int]stubbed{},
		lastUser:    -1,
		first:       [2]int{-1, -1},
		margin:      checkpointMargin,
		reserve:     -1,
	}
	e.hinfo = make([]msgFacts, 0, len(in.Messages))
	e.learn()
	return e
}

// Append adds messages to the history. They are synced, counted and
// projected at the next call that needs them.
func (e *Engine) Append(msgs ...CoreMessage) {
	e.hist = append(e.hist, msgs...)
}

// Len is the number of messages in the history.
func (e *Engine) Len() int { return len(e.hist) }

// SetState replaces the engine's state with a copy of st (a host restoring
// pacing, or a state rebuilt from the log). The whole history is offered
// refs again and the view is rebuilt at the next call: O(n).
func (e *Engine) SetState(st CompressionState) {
	e.st = CloneState(st)
	e.resync = true
	e.dirty = true
}

// State returns a deep copy of the engine's state, refs synced: O(n).
func (e *Engine) State() CompressionState {
	e.sync()
	return CloneState(e.st)
}

// NudgeState and Stats return copies of the state's pacing parts, which a
// host records with every turn.
func (e *Engine) NudgeState() NudgeState {
	return CloneState(CompressionState{Nudge: e.st.Nudge}).Nudge
}

// Stats: see NudgeState.
func (e *Engine) Stats() Stats {
	return CloneState(CompressionState{Stats: e.st.Stats}).Stats
}

// Ref reports a message's ref and the token figure frozen for its tag
// (FormatRefTag); false when it has none (protected, synthetic or unknown).
func (e *Engine) Ref(id string) (ref string, tokens int, ok bool) {
	e.sync()
	ref, ok = RefForRaw(e.st.MessageRefs, id)
	if !ok {
		return "", 0, false
	}
	return ref, e.st.TokenSnapshot[ref], true
}

// View is ProjectView of the history: the view a Compress call must be
// resolved against. It shares its backing array like TurnResult.View.
func (e *Engine) View() []CoreMessage {
	if e.sync(); e.reference {
		return hideCompressCalls(prune(e.hist, e.st), e.st)
	}
	e.project()
	return e.view[:len(e.view):len(e.view)]
}

// ProjectedTokens is ProjectedTokenCount of the history.
func (e *Engine) ProjectedTokens() int {
	if e.sync(); e.reference {
		return sizeWith(e.View(), e.count)
	}
	e.project()
	return e.total
}

// Compress applies one Compress call against View (ApplyCompression) and
// keeps the resulting state; the result's State is the caller's own copy.
// The messages carrying the call and its answer are appended by the host
// afterwards, as with ApplyCompression. O(n), like ApplyCompression.
func (e *Engine) Compress(in CompressInput) ApplyResult {
	view := e.View()
	ar := ApplyCompression(ApplyInput{
		Ranges:      in.Ranges,
		Messages:    view,
		State:       e.st,
		Config:      e.cfg,
		CallID:      in.CallID,
		Archiver:    in.Archiver,
		CreatedAt:   in.CreatedAt,
		Now:         in.Now,
		CountTokens: e.count,
	})
	e.st = ar.State
	if len(ar.BlocksCreated) > 0 {
		e.dirty = true
	}
	ar.State = CloneState(ar.State)
	return ar
}

// Turn is ProcessTurn over the history with the engine's state, which it
// updates. tokenCount is this turn's context size; when it is not positive
// the projected view is measured instead.
func (e *Engine) Turn(tokenCount int) TurnResult {
	if e.sync(); e.reference {
		return e.referenceTurn(tokenCount)
	}
	e.project()
	cfg := e.cfg
	n := len(e.view)
	res := TurnResult{View: e.view[:n:n], ProjectedTokens: e.total, ViewTokens: e.total, Tokens: tokenCount}
	if res.Tokens <= 0 {
		res.Tokens = e.total
	}
	tokens := res.Tokens
	var cut []int
	if cfg.ModelContextLimit > 0 {
		if e.reserve < 0 {
			e.reserve = truncateReserve(cfg, e.count)
		}
		if truncateDue(n, tokens, e.reserve, cfg) {
			view := res.View
			soft, _ := e.zone(view, nil)
			lo, hi := e.first[0], e.first[1]
			tr, c := truncateWith(view, tokens, e.reserve, cfg, e.count, func(i int) cutFacts {
				f := &e.vinfo[i]
				h := f.ref
				if h == "" {
					h = view[i].ID
				}
				return cutFacts{tokens: f.tokens, handle: h, class: cutClass(view[i], f.hard, soft[f.ref], i >= lo && i < hi, f.marker)}
			})
			cut = c
			res.View, res.TruncatedCount = tr.Messages, tr.TruncatedCount
			res.ViewTokens -= tr.SavedTokens
		}
	}
	if cfg.ModelContextLimit <= 0 {
		return res
	}
	beforeNudge(&e.st, cfg, tokens)
	if !nudgeGate(cfg, e.st, tokens) {
		return res
	}
	ov := e.overrides(res.View, cut)
	soft, zoneStart := e.zone(res.View, ov)
	var sc rangeScan
	if len(ov) > 0 {
		sc = e.scanAll(res.View, soft, ov)
	} else {
		sc = e.scan(soft, zoneStart)
	}
	f := e.tier
	f.pendingT1, f.nothingToCompress = sc.viableTokens, sc.viableCount == 0
	d := decideNudge(cfg, e.st, tokens, f)
	if !d.ShouldInject {
		return res
	}
	ranges := append([]RangeInfo(nil), sc.ranges...)
	markDangerous(ranges, soft)
	var prot []ProtectedRange // nil when there is none, as the pass leaves it
	for _, p := range sc.prot {
		p.Tools = append([]string(nil), p.Tools...)
		prot = append(prot, p)
	}
	rec := recommend(ranges, prot, sc.breaks, cfg)
	d.CompressibleRanges = rec.CompressibleRanges
	d.ProtectedRanges = rec.ProtectedRanges
	d.ActiveBlockSpans = append([]BlockSpan(nil), e.spans...)
	d.ContextBreakdown = e.breakdown(res.View, cut)
	d.TruncatedCount = res.TruncatedCount
	d.TierTargetBlocks = cloneBlocks(d.TierTargetBlocks)
	msg := nudgeShown(&e.st, d, tokens)
	res.Nudge, res.NudgeText = &d, msg.Text
	return res
}

// referenceTurn is Turn by the full computation.
func (e *Engine) referenceTurn(tokenCount int) TurnResult {
	projected := e.ProjectedTokens()
	r := ProcessTurn(ProcessTurnInput{Messages: e.hist, State: e.st, Config: e.cfg, TokenCount: tokenCount, CountTokens: e.count})
	e.st = r.State
	res := TurnResult{View: r.Messages, Nudge: r.Nudge, TruncatedCount: r.TruncatedCount, Tokens: tokenCount, ProjectedTokens: projected}
	if res.Tokens <= 0 {
		res.Tokens = projected
	}
	if r.Nudge != nil {
		last := len(r.Messages) - 1
		res.View, res.NudgeText = r.Messages[:last:last], r.Messages[last].Text
	}
	res.ViewTokens = sizeWith(res.View, e.count)
	return res
}

func sizeWith(msgs []CoreMessage, count TokenCountFn) int {
	n := 0
	for _, m := range msgs {
		n += CountMessageTokens(m, count)
	}
	return n
}

func cloneBlocks(bs []CompressionBlock) []CompressionBlock {
	if bs == nil {
		return nil
	}
	out := make([]CompressionBlock, len(bs))
	for i, b := range bs {
		out[i] = cloneBlock(b)
	}
	return out
}

// learn takes the facts of the messages appended since it last ran.
func (e *Engine) learn() {
	for i := len(e.hinfo); i < len(e.hist); i++ {
		m := e.hist[i]
		f := msgFacts{
			tokens:        CountMessageTokens(m, e.count),
			chars:         utf8.RuneCountInString(m.Text),
			defTokens:     -1,
			synthetic:     isSynthetic(m),
			protected:     IsMessageProtected(m, e.cfg),
			neverPreserve: IsNeverPreserveRecentTool(m),
			fence:         strings.Contains(m.Text, "```"),
			marker:        containsMarker(m.Text),
		}
		e.hinfo = append(e.hinfo, f)
		if !f.synthetic {
			if _, dup := e.ids[m.ID]; dup || m.ID == "" {
				e.reference = true
			}
			e.ids[m.ID] = struct{}{}
		}
		if m.ContentType == CTToolCall && m.ToolCallID != "" {
			if f.protected {
				e.histProt[m.ToolCallID] = true
			}
			if m.ToolName == CompressToolName {
				e.compressIDs[m.ToolCallID] = true
			}
		}
	}
}

// sync offers refs to the messages appended since the last sync, exactly
// as syncRefs does for ProcessTurn, with the counts already taken.
func (e *Engine) sync() {
	e.learn()
	from := e.synced
	if e.resync {
		from, e.resync = 0, false
	}
	if from == len(e.hist) {
		return
	}
	if e.reference {
		e.st = syncRefs(e.hist, e.st, e.cfg, e.count)
		e.synced = len(e.hist)
		return
	}
	refs := e.st.MessageRefs
	var fresh []CoreMessage
	var idx []int
	var hard map[string]bool
	for i := from; i < len(e.hist); i++ {
		m := e.hist[i]
		if _, seen := refs.ByRaw[m.ID]; seen || e.hinfo[i].synthetic {
			continue
		}
		fresh = append(fresh, m)
		idx = append(idx, i)
		if e.hinfo[i].protected || (m.ContentType == CTToolResult && e.histProt[m.ToolCallID]) {
			if hard == nil {
				hard = map[string]bool{}
			}
			hard[m.ID] = true
		}
	}
	e.synced = len(e.hist)
	if len(fresh) == 0 {
		return
	}
	assignRefsInto(refs, fresh, len(refs.ByRef)+1, func(m CoreMessage) bool { return hard[m.ID] }, isSynthetic)
	for k, m := range fresh {
		if ref := refs.ByRaw[m.ID]; ref != "" && ref != BlockedRef {
			if _, frozen := e.st.TokenSnapshot[ref]; !frozen {
				e.st.TokenSnapshot[ref] = e.hinfo[idx[k]].tokens
			}
		}
	}
}

// project brings the view up to date with the synced history.
func (e *Engine) project() {
	if !e.dirty && e.built && e.extend() {
		e.work.extends++
		return
	}
	e.work.rebuilds++
	e.rebuild()
}

// extend appends the newly synced messages to the view, as pruning the
// whole history would place them. It reports false, leaving a rebuild to
// the caller, when they could change the view before them: a Compress
// exchange, a message a block covers, a call id already seen, or a call
// answering a result that was left out.
func (e *Engine) extend() bool {
	batch := e.hist[e.projected:e.synced]
	if len(batch) == 0 {
		return true
	}
	visible := make([]bool, len(batch))
	for j, m := range batch {
		if e.hinfo[e.projected+j].synthetic {
			continue
		}
		if _, covered := e.cover[m.ID]; covered || m.ToolName == CompressToolName {
			return false
		}
		switch {
		case m.ContentType == CTToolCall && m.ToolCallID != "":
			id := m.ToolCallID
			if e.hiddenCalls[id] || e.calls[id] || e.orphans[id] {
				return false
			}
			e.calls[id] = true
			if e.hinfo[e.projected+j].protected {
				e.viewProt[id] = true
			}
			visible[j] = true
		case m.ContentType == CTToolResult && m.ToolCallID != "":
			if e.compressIDs[m.ToolCallID] {
				return false
			}
		default:
			visible[j] = true
		}
	}
	for j, m := range batch {
		if m.ContentType != CTToolResult || m.ToolCallID == "" || e.hinfo[e.projected+j].synthetic {
			continue
		}
		if e.calls[m.ToolCallID] {
			visible[j] = true
		} else {
			e.orphans[m.ToolCallID] = true
		}
	}
	for j, m := range batch {
		if visible[j] {
			e.push(m, e.projected+j, nil)
		}
	}
	e.projected = e.synced
	return true
}

// rebuild projects the synced history from scratch (prune, then hide the
// Compress exchanges), reusing every count taken before.
func (e *Engine) rebuild() {
	hist := e.hist[:e.synced]
	pruned, src, hidden := pruneIndexed(hist, e.st, true)
	e.hiddenCalls = hidden
	e.calls = map[string]bool{}
	for _, m := range pruned {
		if m.ContentType == CTToolCall && m.ToolCallID != "" {
			e.calls[m.ToolCallID] = true
		}
	}
	stubbedAt := map[int]bool{}
	view, vsrc := hideCompressCallsIndexed(pruned, src, e.st, func(i int, text string) string {
		h := src[i]
		stubbedAt[h] = true
		s, ok := e.stubs[h]
		if !ok {
			s = e.stub(text)
			e.stubs[h] = s
		}
		return s.text
	})
	e.cover = coveringBlock(e.st)
	e.viewProt = map[string]bool{}
	for i, m := range view {
		if vsrc[i] >= 0 && e.hinfo[vsrc[i]].protected && m.ContentType == CTToolCall && m.ToolCallID != "" {
			e.viewProt[m.ToolCallID] = true
		}
	}
	shown := make([]bool, len(hist))
	for _, s := range vsrc {
		if s >= 0 {
			shown[s] = true
		}
	}
	e.orphans = map[string]bool{}
	for i, m := range hist {
		if !shown[i] && m.ContentType == CTToolResult && m.ToolCallID != "" && m.ToolName != CompressToolName {
			e.orphans[m.ToolCallID] = true
		}
	}

	// Summaries are counted once per distinct text; texts no longer shown
	// are forgotten.
	used := map[string]int{}
	summaryTokens := func(text string) int {
		n, ok := e.summary[text]
		if !ok {
			n = e.count(text)
		}
		used[text] = n
		return n
	}
	e.view = make([]CoreMessage, 0, len(view)+len(view)/4+16)
	e.vinfo = make([]viewFacts, 0, cap(e.view))
	e.total, e.cats, e.lastUser = 0, [nCategories]categorySum{}, -1
	e.first, e.firstOpen = [2]int{-1, -1}, false
	for i, m := range view {
		switch h := vsrc[i]; {
		case h < 0:
			e.add(m, viewFacts{src: -1, tokens: summaryTokens(m.Text), chars: utf8.RuneCountInString(m.Text), synthetic: true, cat: catSummaries})
		case stubbedAt[h]:
			s := e.stubs[h]
			e.push(m, h, &s)
		default:
			e.push(m, h, nil)
		}
	}
	e.tier = tierFactsOf(e.st, summaryTokens)
	e.spans = ActiveBlockSpans(e.st)
	e.summary = used
	e.projected = e.synced
	e.ranges, e.prot, e.breaks, e.cps = e.ranges[:0], e.prot[:0], e.breaks[:0], nil
	e.dirty, e.built = false, true
}

func (e *Engine) stub(text string) stubbed {
	t := stubCompressArgs(text)
	m := CoreMessage{Text: t, ToolName: CompressToolName}
	return stubbed{
		text:      t,
		tokens:    CountMessageTokens(m, e.count),
		chars:     utf8.RuneCountInString(t),
		defTokens: CountMessageTokens(m, nil),
		fence:     strings.Contains(t, "```"),
		marker:    containsMarker(t),
	}
}

// push appends history message m (index h, its arguments stubbed when s is
// not nil) to the view.
func (e *Engine) push(m CoreMessage, h int, s *stubbed) {
	hf := &e.hinfo[h]
	f := viewFacts{src: h, tokens: hf.tokens, chars: hf.chars, neverPreserve: hf.neverPreserve, marker: hf.marker}
	fence := hf.fence
	if s != nil {
		f.tokens, f.chars, f.marker, fence = s.tokens, s.chars, s.marker, s.fence
	}
	f.hard = hf.protected || (m.ContentType == CTToolResult && e.viewProt[m.ToolCallID])
	f.ref, _ = RefForRaw(e.st.MessageRefs, m.ID)
	snap, frozen := 0, false
	if f.ref != "" {
		snap, frozen = e.st.TokenSnapshot[f.ref]
	}
	if !frozen {
		switch {
		case s != nil:
			snap = s.defTokens
		default:
			if hf.defTokens < 0 {
				hf.defTokens = CountMessageTokens(m, nil)
			}
			snap = hf.defTokens
		}
	}
	f.snap = snap
	switch {
	case m.ContentType == CTToolCall || m.ContentType == CTToolResult:
		f.cat = catTool
	case m.Role == RoleSystem:
		f.cat = catSystem
	case fence:
		f.cat = catCode
	default:
		f.cat = catText
	}
	e.add(m, f)
}

func (e *Engine) add(m CoreMessage, f viewFacts) {
	e.view = append(e.view, m)
	e.vinfo = append(e.vinfo, f)
	e.total += f.tokens
	e.cats[f.cat].n++
	e.cats[f.cat].tokens += f.tokens
	i, user := len(e.view)-1, !f.synthetic && isUserText(m)
	if user {
		e.lastUser = i
	}
	switch {
	case e.first[0] < 0 && user:
		e.first, e.firstOpen = [2]int{i, i + 1}, true
	case e.firstOpen && user:
		e.first[1] = i + 1
	default:
		e.firstOpen = false
	}
}

// override is what a truncated view entry measures instead of its facts.
type override struct{ tokens, chars, snap int }

// overrides measures the entries emergency truncation cut.
func (e *Engine) overrides(view []CoreMessage, cut []int) map[int]override {
	if len(cut) == 0 {
		return nil
	}
	out := make(map[int]override, len(cut))
	for _, i := range cut {
		m := view[i]
		o := override{tokens: CountMessageTokens(m, e.count), chars: utf8.RuneCountInString(m.Text), snap: e.vinfo[i].snap}
		if _, frozen := e.st.TokenSnapshot[e.vinfo[i].ref]; e.vinfo[i].ref == "" || !frozen {
			o.snap = CountMessageTokens(m, nil)
		}
		out[i] = o
	}
	return out
}

// zone is ComputeProtectedRefs of view, answered from the cached facts.
func (e *Engine) zone(view []CoreMessage, ov map[int]override) (map[string]bool, int) {
	return softZone(view, e.cfg, zoneFacts{
		lastUser: e.lastUser,
		first:    e.first,
		ref:      func(i int) string { return e.vinfo[i].ref },
		snap: func(i int) int {
			if o, ok := ov[i]; ok {
				return o.snap
			}
			return e.vinfo[i].snap
		},
		synthetic:     func(i int) bool { return e.vinfo[i].synthetic },
		neverPreserve: func(i int) bool { return e.vinfo[i].neverPreserve },
	})
}

// scanAll runs the range pass over a truncated view from the start, on
// lists of its own.
func (e *Engine) scanAll(view []CoreMessage, soft map[string]bool, ov map[int]override) rangeScan {
	var sc rangeScan
	for i, m := range view {
		f := &e.vinfo[i]
		if f.synthetic {
			sc.boundary()
			continue
		}
		tokens, chars := f.tokens, f.chars
		if o, ok := ov[i]; ok {
			tokens, chars = o.tokens, o.chars
		}
		sc.step(m, f.hard, f.ref, soft[f.ref], tokens, chars)
	}
	sc.flush()
	sc.pflush()
	return sc
}

// scan runs the range pass over the view from the furthest checkpoint still
// valid, takes new checkpoints on the way, and closes the open runs. The
// result's lists alias the engine's and are valid until the next turn.
func (e *Engine) scan(soft map[string]bool, zoneStart int) rangeScan {
	lu, n := e.lastUser, len(e.view)
	valid := func(c checkpoint) bool {
		if c.pos > zoneStart || c.first != e.first {
			return false
		}
		if lu >= 0 && lu < c.pos {
			return c.lastUser == lu
		}
		return c.lastUser < 0
	}
	var from *checkpoint
	for i := range e.cps {
		if valid(e.cps[i]) && (from == nil || e.cps[i].pos > from.pos) {
			from = &e.cps[i]
		}
	}
	var sc rangeScan
	start := 0
	if from != nil {
		e.work.resumed++
		sc = from.resume()
		start = from.pos
		sc.ranges, sc.prot, sc.breaks = e.ranges[:from.nRanges], e.prot[:from.nProt], e.breaks[:from.nBreaks]
	} else {
		e.work.scannedFrom0++
		sc.ranges, sc.prot, sc.breaks = e.ranges[:0], e.prot[:0], e.breaks[:0]
	}
	e.work.scanned += n - start
	// The valid checkpoints lie at or before the resume point; the others
	// are taken again on the way.
	var kept []checkpoint
	for _, c := range e.cps {
		if valid(c) {
			kept = append(kept, c)
		}
	}
	// Where to stop next: before the first soft-protected entry (free), and
	// before the zone with the latest user message behind (withUser).
	free := min(zoneStart, n)
	if lu >= 0 {
		free = min(free, lu)
	}
	free -= e.margin
	withUser := -1
	if lu >= 0 && lu < zoneStart-e.margin {
		withUser = zoneStart - e.margin
	}
	take := func(pos, lastUser int) {
		c := sc.checkpoint(pos, lastUser)
		c.first = e.first
		for i := range kept {
			if (kept[i].lastUser < 0) == (lastUser < 0) {
				kept[i] = c
				return
			}
		}
		kept = append(kept, c)
	}
	for i := start; i < n; i++ {
		if i == free && free > start {
			take(i, -1)
		}
		if i == withUser && withUser > start {
			take(i, lu)
		}
		f := &e.vinfo[i]
		if f.synthetic {
			sc.boundary()
			continue
		}
		sc.step(e.view[i], f.hard, f.ref, soft[f.ref], f.tokens, f.chars)
	}
	e.cps = kept
	// Closing the open runs appends past every checkpoint, so the next
	// turn's resume overwrites it.
	sc.flush()
	sc.pflush()
	e.ranges, e.prot, e.breaks = sc.ranges, sc.prot, sc.breaks
	return sc
}

// checkpoint copies the pass's state at pos.
func (sc *rangeScan) checkpoint(pos, lastUser int) checkpoint {
	c := checkpoint{pos: pos, lastUser: lastUser, scan: *sc, nRanges: len(sc.ranges), nProt: len(sc.prot), nBreaks: len(sc.breaks)}
	c.scan.ranges, c.scan.prot, c.scan.breaks = nil, nil, nil
	c.scan.pcur.Tools = append([]string(nil), sc.pcur.Tools...)
	return c
}

// resume is the pass's state at the checkpoint, owned by the caller.
func (c *checkpoint) resume() rangeScan {
	sc := c.scan
	sc.pcur.Tools = append([]string(nil), c.scan.pcur.Tools...)
	return sc
}

// breakdown is ComputeContextBreakdown of the view, cut entries measured
// as cut.
func (e *Engine) breakdown(view []CoreMessage, cut []int) map[string]int {
	out := map[string]int{}
	for c, s := range e.cats {
		if s.n > 0 {
			out[categoryNames[c]] = s.tokens
		}
	}
	for _, i := range cut {
		f := &e.vinfo[i]
		out[categoryNames[f.cat]] += CountMessageTokens(view[i], e.count) - f.tokens
	}
	return out
}
