package noa

import (
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// RangeInfo describes an unbroken run of messages that may be compressed;
// each becomes a row of the nudge's range table.
type RangeInfo struct {
	StartRef string
	EndRef   string
	// Count: messages in the run.
	Count int
	// Tokens and Chars measure the run; Chars is what MinCompressRange is
	// checked against.
	Tokens int
	Chars  int
	// ToolPct and TextPct are rounded shares of the span's tokens held by
	// tool calls/results and by plain text.
	ToolPct int
	TextPct int
	// UserMsgs: how many of the run's messages the user wrote.
	UserMsgs int
	// Dangerous flags a run to compress only when the model is sure:
	// it holds user messages and runs right up to the protected recent zone,
	// so it probably carries the intent of the current work.
	Dangerous bool
}

// ProtectedRange is a run that may not be compressed. It is listed so the
// model understands the holes between compressible ranges.
type ProtectedRange struct {
	StartRef string
	EndRef   string
	Count    int
	Tokens   int
	// Tools lists the protected tools that caused the run; nil when the run
	// is protected only for being recent.
	Tools []string

	// after is the ref of the last addressable message before the span. A
	// span of hard-protected messages has no refs of its own (they are
	// BLOCKED), so this is what places it in FormatRanges' ordered list.
	after string
}

// BlockSpan is a live block's extent, a row of the nudge's block map.
type BlockSpan struct {
	BlockID  string
	Tier     Tier
	StartRef string
	EndRef   string
	// Count is how many messages the block covers.
	Count int
	// SummaryTokens is what the block costs now; OriginalTokens what it
	// replaced.
	SummaryTokens  int
	OriginalTokens int
	Topic          string
}

// ActiveBlockSpans returns a BlockSpan per live block, sorted by start ref.
func ActiveBlockSpans(state CompressionState) []BlockSpan {
	var out []BlockSpan
	for _, b := range state.Blocks {
		if !b.Active {
			continue
		}
		out = append(out, BlockSpan{
			BlockID:        b.BlockID,
			Tier:           b.Tier,
			StartRef:       b.StartRef,
			EndRef:         b.EndRef,
			Count:          len(b.EffectiveMessageIDs),
			SummaryTokens:  DefaultCountTokens(RenderSummaryMessage(b).Text),
			OriginalTokens: b.CompressedTokens,
			Topic:          b.Topic,
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartRef < out[j].StartRef })
	return out
}

// BuildCompressibleRanges makes one pass over the view, collecting runs of
// messages that could be compressed: they have a ref, no block covers them
// and no protection applies. A run ends at a summary, a hard-protected message
// (reported as a ProtectedRange naming its tools), or the soft zone (reported
// as a ProtectedRange without tools).
func BuildCompressibleRanges(msgs []CoreMessage, state CompressionState, cfg Config, protectedRefs map[string]bool, count TokenCountFn) ([]RangeInfo, []ProtectedRange) {
	sc := scanRanges(msgs, state, cfg, protectedRefs, count)
	return sc.ranges, sc.prot
}

// scanRanges is BuildCompressibleRanges' pass, returned whole.
func scanRanges(msgs []CoreMessage, state CompressionState, cfg Config, protectedRefs map[string]bool, count TokenCountFn) rangeScan {
	count = countFn(count)
	hard := hardProtectedIDs(msgs, cfg)
	var sc rangeScan
	for _, m := range msgs {
		if isSynthetic(m) {
			sc.boundary()
			continue
		}
		ref, _ := RefForRaw(state.MessageRefs, m.ID)
		sc.step(m, hard[m.ID], ref, protectedRefs[ref], CountMessageTokens(m, count), -1)
	}
	sc.finish(protectedRefs)
	return sc
}

// rangeScan is the state of BuildCompressibleRanges' pass. The Engine keeps
// copies of it (checkpoints) part way along the view so that a turn resumes
// the pass near the end instead of starting over; closed runs are appended
// to ranges and prot and never changed afterwards.
type rangeScan struct {
	ranges []RangeInfo
	prot   []ProtectedRange

	cur              RangeInfo
	hasCur           bool
	curTool, curText int
	pcur             ProtectedRange
	hasPcur          bool
	lastRef          string
	// breaks are the indexes in ranges of the runs a block's summary
	// precedes: recommended ranges are not merged across a summary.
	// summary: a summary was passed since the last run started.
	breaks  []int
	summary bool

	// viableTokens and viableCount sum the closed ranges that
	// ViableRanges keeps: what a nudge decision needs without the list.
	viableTokens int
	viableCount  int
}

func (sc *rangeScan) flush() {
	if sc.hasCur {
		cur := sc.cur
		if cur.Tokens > 0 {
			cur.ToolPct = int(math.Round(100 * float64(sc.curTool) / float64(cur.Tokens)))
			cur.TextPct = int(math.Round(100 * float64(sc.curText) / float64(cur.Tokens)))
		}
		sc.ranges = append(sc.ranges, cur)
		if cur.Tokens >= ViableRangeMinTokens {
			sc.viableTokens += cur.Tokens
			sc.viableCount++
		}
		sc.cur, sc.hasCur = RangeInfo{}, false
	}
	sc.curTool, sc.curText = 0, 0
}

func (sc *rangeScan) pflush() {
	if sc.hasPcur {
		sort.Strings(sc.pcur.Tools)
		sc.prot = append(sc.prot, sc.pcur)
		sc.pcur, sc.hasPcur = ProtectedRange{}, false
	}
}

// boundary is a synthetic message: it ends both kinds of run.
func (sc *rangeScan) boundary() {
	sc.flush()
	sc.pflush()
	sc.summary = true
}

// step adds one non-synthetic message. ref is "" when it has none; soft
// says the ref is in the soft zone; chars < 0 means count m.Text's runes.
func (sc *rangeScan) step(m CoreMessage, hard bool, ref string, soft bool, tokens, chars int) {
	if hard {
		sc.flush()
		if sc.hasPcur && len(sc.pcur.Tools) == 0 {
			sc.pflush()
		}
		if !sc.hasPcur {
			sc.pcur, sc.hasPcur = ProtectedRange{after: sc.lastRef}, true
		}
		sc.pcur.Count++
		sc.pcur.Tokens += tokens
		name := m.ToolName
		if name == "" {
			name = "(tool)"
		}
		if !containsStr(sc.pcur.Tools, name) {
			sc.pcur.Tools = append(sc.pcur.Tools, name)
		}
		// Blocked messages have no ref; the span is described by its
		// neighbours, so refs stay empty unless a ref'd message joins.
		return
	}
	if ref == "" {
		return
	}
	sc.lastRef = ref
	if soft {
		sc.flush()
		if sc.hasPcur && len(sc.pcur.Tools) > 0 {
			sc.pflush()
		}
		if !sc.hasPcur {
			sc.pcur, sc.hasPcur = ProtectedRange{StartRef: ref, after: ref}, true
		}
		if sc.pcur.StartRef == "" {
			sc.pcur.StartRef = ref
		}
		sc.pcur.EndRef = ref
		sc.pcur.Count++
		sc.pcur.Tokens += tokens
		return
	}
	sc.pflush()
	if !sc.hasCur {
		sc.cur, sc.hasCur = RangeInfo{StartRef: ref}, true
		if sc.summary {
			sc.breaks = append(sc.breaks, len(sc.ranges))
			sc.summary = false
		}
	}
	if chars < 0 {
		chars = utf8.RuneCountInString(m.Text)
	}
	sc.cur.EndRef = ref
	sc.cur.Count++
	sc.cur.Tokens += tokens
	sc.cur.Chars += chars
	switch {
	case m.ContentType == CTToolCall || m.ContentType == CTToolResult:
		sc.curTool += tokens
	case m.ContentType == CTText:
		sc.curText += tokens
	}
	if m.Role == RoleUser && m.ContentType == CTText {
		sc.cur.UserMsgs++
	}
}

// finish closes the open runs and returns the lists; the last range is
// marked Dangerous when it holds user messages and runs straight into the
// soft zone, where the current intent most likely lives.
func (sc *rangeScan) finish(protectedRefs map[string]bool) ([]RangeInfo, []ProtectedRange) {
	sc.flush()
	sc.pflush()
	markDangerous(sc.ranges, protectedRefs)
	return sc.ranges, sc.prot
}

// markDangerous flags the last range when it holds user messages and the
// message right after it is soft-protected.
func markDangerous(ranges []RangeInfo, protectedRefs map[string]bool) {
	if n := len(ranges); n > 0 && ranges[n-1].UserMsgs > 0 && len(protectedRefs) > 0 {
		last := ranges[n-1]
		if idx, ok := RefToIndex(last.EndRef); ok && protectedRefs[IndexToRef(idx+1)] {
			ranges[n-1].Dangerous = true
		}
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// ViableRanges removes ranges below ViableRangeMinTokens. Such scraps save
// little, and a model that batches one would sink the whole call at the
// size check.
func ViableRanges(ranges []RangeInfo) []RangeInfo {
	var out []RangeInfo
	for _, r := range ranges {
		if r.Tokens >= ViableRangeMinTokens {
			out = append(out, r)
		}
	}
	return out
}

// MergeRangesToThreshold coalesces neighbouring ranges (in list order) until
// each batch holds at least minChars characters, so the model is not handed
// a fragment that fails the size gate on its own. A short remainder at the
// end joins the batch before it. A merged range spans its parts' refs; the
// protected messages between them stay protected when it is applied.
func MergeRangesToThreshold(ranges []RangeInfo, minChars int) []RangeInfo {
	var out []RangeInfo
	var cur *RangeInfo
	var tool, text float64
	flush := func() {
		if cur == nil {
			return
		}
		if cur.Tokens > 0 {
			cur.ToolPct = int(math.Round(100 * tool / float64(cur.Tokens)))
			cur.TextPct = int(math.Round(100 * text / float64(cur.Tokens)))
		}
		out = append(out, *cur)
		cur, tool, text = nil, 0, 0
	}
	add := func(r RangeInfo) {
		if cur == nil {
			c := r
			cur = &c
			tool = float64(r.ToolPct) * float64(r.Tokens) / 100
			text = float64(r.TextPct) * float64(r.Tokens) / 100
			return
		}
		extendRange(cur, r)
		tool += float64(r.ToolPct) * float64(r.Tokens) / 100
		text += float64(r.TextPct) * float64(r.Tokens) / 100
	}
	for _, r := range ranges {
		add(r)
		if cur.Chars >= minChars {
			flush()
		}
	}
	if cur != nil {
		if len(out) > 0 {
			rem := *cur
			cur = nil
			last := out[len(out)-1]
			out = out[:len(out)-1]
			add(last)
			tool = float64(last.ToolPct) * float64(last.Tokens) / 100
			text = float64(last.TextPct) * float64(last.Tokens) / 100
			add(rem)
		}
		flush()
	}
	return out
}

// Recommendation is the guidance a nudge presents: the ranges worth
// compressing, the protected ones, and a flag for when there is nothing to do.
type Recommendation struct {
	CompressibleRanges []RangeInfo
	ProtectedRanges    []ProtectedRange
	NothingToCompress  bool
	// ReclaimableTokens is what every viable range holds together, listed
	// or not: what the pacing weighs. Zero means the sum of
	// CompressibleRanges (a Recommendation built by hand).
	ReclaimableTokens int
}

// MaxRecommendedRanges caps the ranges a nudge names. Every Compress call
// rewrites the provider's prompt cache from its first changed message on,
// so the nudge asks for one call over a few large ranges (issue 27).
const MaxRecommendedRanges = 4

// BuildRecommendation computes the soft zone, finds the ranges and picks
// the few large ones a nudge names (see recommend).
func BuildRecommendation(msgs []CoreMessage, state CompressionState, cfg Config, count TokenCountFn) Recommendation {
	soft := ComputeProtectedRefs(msgs, state, cfg)
	sc := scanRanges(msgs, state, cfg, soft, count)
	return recommend(sc.ranges, sc.prot, sc.breaks, cfg)
}

// recommend is BuildRecommendation's last part. It merges neighbouring runs
// into one range wherever nothing stands between them that a range must not
// reach across (the soft zone, the first or latest user message, or a
// block's summary; hard-protected messages inside a merged range stay
// protected when it is applied), drops merged ranges without a viable run
// in them, and keeps the MaxRecommendedRanges largest, oldest first; a
// range under a twentieth of the largest is dropped as not worth naming.
//
// This replaces the spec's list of every viable run merged only up to
// MinCompressRange: that list grew to thousands of characters of small
// alternating spans, each compressed on its own (issue 27).
func recommend(ranges []RangeInfo, prot []ProtectedRange, breaks []int, cfg Config) Recommendation {
	soft := softSpans(prot)
	rec := Recommendation{ProtectedRanges: prot}
	var picked []RangeInfo
	var seg []RangeInfo
	closeSeg := func() {
		// Trim runs too small to be worth anything off both ends.
		for len(seg) > 0 && seg[0].Tokens < ViableRangeMinTokens {
			seg = seg[1:]
		}
		for len(seg) > 0 && seg[len(seg)-1].Tokens < ViableRangeMinTokens {
			seg = seg[:len(seg)-1]
		}
		if len(seg) > 0 {
			picked = append(picked, mergeAll(seg))
		}
		seg = nil
	}
	next := 0 // the first of breaks not passed yet
	for i, r := range ranges {
		if r.Tokens >= ViableRangeMinTokens {
			rec.ReclaimableTokens += r.Tokens
		}
		summary := false
		for next < len(breaks) && breaks[next] <= i {
			summary = summary || breaks[next] == i
			next++
		}
		if i > 0 && (summary || softBetween(soft, ranges[i-1].EndRef, r.StartRef)) {
			closeSeg()
		}
		seg = append(seg, r)
	}
	closeSeg()
	rec.NothingToCompress = len(picked) == 0
	if len(picked) > 1 {
		order := make([]int, len(picked))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return picked[order[a]].Tokens > picked[order[b]].Tokens })
		floor := picked[order[0]].Tokens / 20
		keep := map[int]bool{}
		for k, i := range order {
			if k < MaxRecommendedRanges && (k == 0 || picked[i].Tokens >= floor) {
				keep[i] = true
			}
		}
		var out []RangeInfo
		for i, r := range picked {
			if keep[i] {
				out = append(out, r)
			}
		}
		picked = out
	}
	rec.CompressibleRanges = picked
	return rec
}

// extendRange adds r, which follows dst, to dst (the shares excepted).
func extendRange(dst *RangeInfo, r RangeInfo) {
	dst.EndRef = r.EndRef
	dst.Count += r.Count
	dst.Tokens += r.Tokens
	dst.Chars += r.Chars
	dst.UserMsgs += r.UserMsgs
	dst.Dangerous = dst.Dangerous || r.Dangerous
}

// mergeAll joins runs, oldest first, into one range spanning all of them.
func mergeAll(rs []RangeInfo) RangeInfo {
	out := rs[0]
	var tool, text float64
	for i, r := range rs {
		if i > 0 {
			extendRange(&out, r)
		}
		tool += float64(r.ToolPct) * float64(r.Tokens) / 100
		text += float64(r.TextPct) * float64(r.Tokens) / 100
	}
	if out.Tokens > 0 {
		out.ToolPct = int(math.Round(100 * tool / float64(out.Tokens)))
		out.TextPct = int(math.Round(100 * text / float64(out.Tokens)))
	}
	return out
}

// softSpans keeps the soft-zone spans of prot (no tools, a start ref): the
// only ones softBetween looks at. There are few, so filtering them once
// keeps the merge linear in the number of ranges.
func softSpans(prot []ProtectedRange) []ProtectedRange {
	var out []ProtectedRange
	for _, p := range prot {
		if len(p.Tools) == 0 && p.StartRef != "" {
			out = append(out, p)
		}
	}
	return out
}

// softBetween reports a soft-zone span (from softSpans) lying between two
// refs.
func softBetween(soft []ProtectedRange, after, before string) bool {
	lo, _ := RefToIndex(after)
	hi, _ := RefToIndex(before)
	for _, p := range soft {
		if n, ok := RefToIndex(p.StartRef); ok && n > lo && n < hi {
			return true
		}
	}
	return false
}

// ComputeContextBreakdown sums tokens per category ("summaries", "tool",
// "system", "code", "text"); the nudge shows it so the model knows what is
// filling its window.
func ComputeContextBreakdown(msgs []CoreMessage, count TokenCountFn) map[string]int {
	count = countFn(count)
	out := map[string]int{}
	for _, m := range msgs {
		if m.ID == NudgeMessageID {
			continue
		}
		n := CountMessageTokens(m, count)
		switch {
		case isRenderedSummaryMessage(m):
			out["summaries"] += n
		case m.ContentType == CTToolCall || m.ContentType == CTToolResult:
			out["tool"] += n
		case m.Role == RoleSystem:
			out["system"] += n
		case strings.Contains(m.Text, "```"):
			out["code"] += n
		default:
			out["text"] += n
		}
	}
	return out
}
