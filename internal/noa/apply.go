package noa

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// CompressRange is a single entry of the model's Compress request.
type CompressRange struct {
	StartRef string
	EndRef   string
	Summary  string
	Topic    string
	// SummaryMaxChars, when set, lifts the summary length limit for just
	// this entry.
	SummaryMaxChars *int
}

// ApplyInput carries one Compress call plus everything needed to apply it.
type ApplyInput struct {
	Ranges []CompressRange
	// Messages must be the exact view the model saw when it chose its refs,
	// or the refs land in the wrong places. Archives are cut from it, so it
	// holds the full texts, not emergency-truncated copies (ProjectView
	// builds it that way).
	Messages []CoreMessage
	State    CompressionState
	Config   Config
	// CallID identifies the tool_use that carried this call.
	CallID string
	// Archiver must be non-nil: no block is made without saving its source.
	Archiver Archiver
	// CreatedAt (RFC3339) and Now (Unix seconds) name one moment, given by
	// the host because noa stays clock-free.
	CreatedAt string
	Now       int64
	// CountTokens, if non-nil, replaces the default token estimate.
	CountTokens TokenCountFn
}

// ApplyResult is the outcome of ApplyCompression. Errors and Warnings are
// shown to the model, so they tell it how to fix the call.
type ApplyResult struct {
	State            CompressionState
	BlocksCreated    []CompressionBlock
	TokensCompressed int
	Errors           []string
	Warnings         []string
	// SurvivingBlockIDs: blocks inside a range whose tier was too high to be
	// merged this time; they remain live.
	SurvivingBlockIDs []string
}

type plannedRange struct {
	n        int // 1-based position in the call
	req      CompressRange
	rr       ResolvedRange
	d        TierDecision
	direct   []string
	chars    int
	deadKey  string
	blockID  string
	archive  []byte
	block    CompressionBlock
	surviors []string
}

// ApplyCompression applies one Compress call. Steps: resolve all ranges;
// refuse the call outright if two of its ranges overlap; check sizes for the
// call as a whole; prepare blocks and archive bytes without side effects;
// save the archives; and only after all saves succeed, update state. If a
// save fails, the saved archives are deleted and the state comes back as it
// was given: a block without its stored source could not be expanded later.
//
// Other failures are reported per range; ranges that pass still apply.
// A call that creates no block counts as a failed attempt (it feeds
// MaxCompressAttempts); a call with no ranges counts as nothing.
func ApplyCompression(in ApplyInput) ApplyResult {
	count := countFn(in.CountTokens)
	cfg := in.Config
	st := CloneState(in.State)
	if st.Stats.DeadRanges == nil {
		st.Stats.DeadRanges = map[string]int{}
	}
	res := ApplyResult{}
	if len(in.Ranges) == 0 {
		res.State = st
		res.Warnings = append(res.Warnings, NoRangesMessage)
		return res
	}
	if in.Archiver == nil {
		res.State = CloneState(in.State)
		res.Errors = append(res.Errors, "compression is unavailable: the host has no archive storage configured, so originals could not be kept. Nothing was changed.")
		return res
	}
	fail := func() ApplyResult {
		st.Stats.ConsecutiveFailures++
		res.State = st
		return res
	}

	pos := make(map[string]int, len(in.Messages))
	for i, m := range in.Messages {
		pos[m.ID] = i
	}
	covered := CoveredMessageIDs(st)
	cover := coveringBlock(st)
	rv := newResolver(in.Messages, st)
	hard := hardProtectedIDs(in.Messages, cfg)
	soft := ComputeProtectedRefs(in.Messages, st, cfg)
	task, afterTask := taskIDs(in.Messages, st)
	claimedMsgs := map[string]int{}
	claimedBlocks := map[string]int{}
	var plans []*plannedRange
	overlapped := false

	for i, r := range in.Ranges {
		n := i + 1
		label := fmt.Sprintf("range %d (%s..%s)", n, strings.TrimSpace(r.StartRef), strings.TrimSpace(r.EndRef))
		key := deadRangeKey(r.StartRef, r.EndRef)
		if c := st.Stats.DeadRanges[key]; c >= DeadRepeatReject {
			st.Stats.DeadRanges[key] = c + 1
			res.Errors = append(res.Errors, fmt.Sprintf("%s: this exact range has already failed %d times and is rejected without another attempt. "+
				"Stop requesting it; pick ranges from the latest range table instead.", label, c))
			continue
		}
		if msg := checkSummary(r, cfg); msg != "" {
			res.Errors = append(res.Errors, label+": "+msg)
			continue
		}
		rr, nf := rv.resolve(r.StartRef, r.EndRef)
		if nf != nil {
			st.Stats.DeadRanges[key]++
			res.Errors = append(res.Errors, label+": "+nf.Msg)
			continue
		}
		if id, ok := firstIn(rr.MessageIDs, task); ok {
			ref, _ := RefForRaw(st.MessageRefs, id)
			fix := "Start the range after it"
			if afterTask != "" {
				fix += ", at " + afterTask + " or later,"
			}
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %s is the conversation's first user message (the task), which stays in view verbatim and is never compressed. %s and call again.",
				label, ref, fix))
			continue
		}
		d := decideTier(rr, st, cfg, covered)

		// Direct coverage: addressable, uncovered, unprotected messages.
		folded := map[string]bool{}
		excluded := 0
		for _, id := range rr.MessageIDs {
			if covered[id] {
				continue
			}
			ref, ok := RefForRaw(st.MessageRefs, id)
			if !ok || hard[id] || soft[ref] {
				excluded++
				continue
			}
			folded[id] = true
		}
		folded, extra := repairPairs(in.Messages, rr.StartIndex, rr.EndIndex, folded)
		excluded += extra
		if excluded > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %d message(s) in the range stay visible because they are protected "+
				"(recent work, the latest user message, or a protected tool) or belong to a turn that must stay whole.", label, excluded))
		}
		var direct []string
		for _, id := range rr.MessageIDs {
			if folded[id] {
				direct = append(direct, id)
			}
		}
		if len(direct) == 0 && len(d.ConsumedBlockIDs) == 0 {
			st.Stats.DeadRanges[key]++
			res.Errors = append(res.Errors, label+": nothing in this range can be compressed; everything in it is protected or already compressed. Choose a range from the table of compressible ranges.")
			continue
		}
		if IsTerminalRewrite(d, len(direct), cfg) {
			st.Stats.DeadRanges[key]++
			res.Errors = append(res.Errors, fmt.Sprintf("%s: every block in this range is already at the top tier (T%d) and no new message is included. "+
				"Rewriting top-tier summaries reclaims nothing and loses detail; leave them as they are.", label, maxTier(cfg)))
			continue
		}
		overlap := 0
		for _, id := range direct {
			if o, ok := claimedMsgs[id]; ok {
				overlap = o
			}
		}
		for _, id := range d.ConsumedBlockIDs {
			if o, ok := claimedBlocks[id]; ok {
				overlap = o
			}
		}
		if overlap > 0 {
			// The model's intent is unclear (it may have meant the union), so
			// the whole call is refused below rather than guessing which half
			// it meant.
			first := in.Ranges[overlap-1]
			res.Errors = append(res.Errors, fmt.Sprintf("%s overlaps range %d (%s..%s) of this same call. Each message may be compressed once: merge the two into one range, or drop one, and call again.",
				label, overlap, strings.TrimSpace(first.StartRef), strings.TrimSpace(first.EndRef)))
			overlapped = true
			continue
		}
		for _, id := range direct {
			claimedMsgs[id] = n
		}
		for _, id := range d.ConsumedBlockIDs {
			claimedBlocks[id] = n
		}
		chars, cut := 0, 0
		for _, id := range direct {
			text := in.Messages[pos[id]].Text
			chars += utf8.RuneCountInString(text)
			if containsMarker(text) {
				cut++
			}
		}
		if cut > 0 {
			// A host bug, not the model's: archives must come from the
			// stored originals (ProjectView), not the truncated request.
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %d message(s) arrived already shortened for space; their archive holds the shortened text.", label, cut))
		}
		res.Warnings = append(res.Warnings, prefixAll(label+": ", rr.Warnings)...)
		plans = append(plans, &plannedRange{n: n, req: r, rr: rr, d: d, direct: direct, chars: chars, deadKey: key})
	}
	if len(plans) == 0 {
		return fail()
	}
	if overlapped {
		res.Errors = append(res.Errors, "Because ranges in this call overlap, nothing was compressed.")
		return fail()
	}

	// The atomic size gate: message-boundary ranges together must clear the
	// floor, or the whole call is rejected. Block ranges are exempt.
	msgChars, hasMsg := 0, false
	for _, p := range plans {
		if p.rr.Kind == BoundaryMessage && p.d.TargetTier == 0 {
			msgChars += p.chars
			hasMsg = true
		}
	}
	if hasMsg && msgChars < cfg.Compress.MinCompressRange {
		res.Errors = append(res.Errors, fmt.Sprintf("the message ranges in this call cover only %d characters; one call must compress at least %d. "+
			"Nothing was compressed. Put several ranges from the table into one call, or wait until more context has accumulated.",
			msgChars, cfg.Compress.MinCompressRange))
		return fail()
	}

	// Build every block and its archive in memory.
	next := max(st.NextBlockID, 1)
	for _, p := range plans {
		p.blockID = "b" + itoa(next)
		next++
		p.block, p.archive = buildBlock(p, in, st, count, cover)
		p.surviors = p.d.SurvivingBlockIDs
	}

	// Write every archive; roll back on the first failure.
	var written []string
	for _, p := range plans {
		abs, rel, err := in.Archiver.Write(p.block.Tier, p.block.BlockID, p.block.StartRef, p.block.EndRef, p.archive)
		if err != nil {
			var rollback []string
			for _, w := range written {
				if rerr := in.Archiver.Remove(w); rerr != nil {
					rollback = append(rollback, rerr.Error())
				}
			}
			out := ApplyResult{State: CloneState(in.State)}
			msg := fmt.Sprintf("archiving the originals of %s failed (%v), so nothing was compressed and no state changed. "+
				"This is a storage problem on the host, not a mistake in your call; you may retry the same call later.", p.block.BlockID, err)
			if len(rollback) > 0 {
				msg += " Rolling back earlier archives also reported: " + strings.Join(rollback, "; ")
			}
			out.Errors = append(out.Errors, msg)
			return out
		}
		written = append(written, abs)
		p.block.ArchivePath, p.block.ArchiveRel = abs, rel
	}

	// Only now change state.
	st.NextBlockID = next
	for _, p := range plans {
		for _, id := range p.d.ConsumedBlockIDs {
			if b := FindBlock(&st, id); b != nil {
				b.Active = false
			}
		}
		st.Blocks = append(st.Blocks, p.block)
		res.BlocksCreated = append(res.BlocksCreated, cloneBlock(p.block))
		res.TokensCompressed += p.block.CompressedTokens
		delete(st.Stats.DeadRanges, p.deadKey)
		for _, s := range p.surviors {
			res.SurvivingBlockIDs = append(res.SurvivingBlockIDs, s)
			if b := FindBlock(&st, s); b != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s stays active inside range %d: one tier is consolidated at a time, and it is already above the tier being compressed.", blockLabel(*b), p.n))
			}
		}
	}
	st.Stats.Compressions++
	st.Stats.BlocksCreated += len(plans)
	st.Stats.TokensCompressed += res.TokensCompressed
	st.Stats.ConsecutiveFailures = 0
	st.Stats.SuppressedAtTokens = 0
	res.State = st
	return res
}

// buildBlock assembles a block and renders its archive, without touching st.
func buildBlock(p *plannedRange, in ApplyInput, st CompressionState, count TokenCountFn, cover map[string]string) (CompressionBlock, []byte) {
	consumed := map[string]bool{}
	for _, id := range p.d.ConsumedBlockIDs {
		consumed[id] = true
	}
	directSet := map[string]bool{}
	for _, id := range p.direct {
		directSet[id] = true
	}
	eff := append([]string(nil), p.direct...)
	for _, id := range p.d.ConsumedBlockIDs {
		if b := FindBlock(&st, id); b != nil {
			eff = append(eff, b.EffectiveMessageIDs...)
		}
	}
	refIdx := func(id string) int {
		r, _ := RefForRaw(st.MessageRefs, id)
		n, _ := RefToIndex(r)
		return n
	}
	sort.SliceStable(eff, func(i, j int) bool { return refIdx(eff[i]) < refIdx(eff[j]) })
	eff = dedupe(eff)

	tokens := 0
	var entries []ArchiveEntry
	added := map[string]bool{}
	addBlock := func(id string) {
		if added[id] {
			return
		}
		added[id] = true
		if b := FindBlock(&st, id); b != nil {
			cb := cloneBlock(*b)
			entries = append(entries, ArchiveEntry{Block: &cb})
			tokens += CountMessageTokens(RenderSummaryMessage(cb), count)
		}
	}
	for i := p.rr.StartIndex; i <= p.rr.EndIndex; i++ {
		m := in.Messages[i]
		if id, ok := BlockIDFromSummaryID(m.ID); ok && isRenderedSummaryMessage(m) {
			if consumed[id] {
				addBlock(id)
			}
			continue
		}
		if c := cover[m.ID]; c != "" && consumed[c] {
			addBlock(c)
			continue
		}
		if directSet[m.ID] {
			mc := m
			ref, _ := RefForRaw(st.MessageRefs, m.ID)
			entries = append(entries, ArchiveEntry{Message: &mc, Ref: ref})
			tokens += CountMessageTokens(m, count)
		}
	}
	// Consumed blocks not visible in the span still belong in the archive.
	for _, id := range p.d.ConsumedBlockIDs {
		addBlock(id)
	}

	var startRef, endRef string
	if len(eff) > 0 {
		startRef, _ = RefForRaw(st.MessageRefs, eff[0])
		endRef, _ = RefForRaw(st.MessageRefs, eff[len(eff)-1])
	}
	topic := strings.TrimSpace(p.req.Topic)
	b := CompressionBlock{
		BlockID:             p.blockID,
		Tier:                p.d.OutputTier,
		Topic:               topic,
		Summary:             strings.TrimSpace(p.req.Summary),
		DirectMessageIDs:    append([]string(nil), p.direct...),
		EffectiveMessageIDs: eff,
		DirectBlockIDs:      append([]string(nil), p.d.ConsumedBlockIDs...),
		CompressedTokens:    tokens,
		StartRef:            startRef,
		EndRef:              endRef,
		CreatedAt:           in.Now,
		Active:              true,
		CompressCallID:      in.CallID,
	}
	archive := RenderArchive(ArchiveRenderInput{
		BlockID:        b.BlockID,
		Tier:           b.Tier,
		SessionID:      st.SessionID,
		CreatedAt:      in.CreatedAt,
		StartRef:       startRef,
		EndRef:         endRef,
		Topic:          topic,
		Summary:        b.Summary,
		Entries:        entries,
		OriginalTokens: tokens,
	})
	return b, archive
}

// repairPairs withdraws folded messages that would leave a tool exchange or
// a reasoning turn half-visible once protected messages were left out. It
// returns the repaired set and how many messages were withdrawn.
func repairPairs(msgs []CoreMessage, start, end int, folded map[string]bool) (map[string]bool, int) {
	lo := max(0, start-4*ToolPairMaxScan)
	hi := min(len(msgs), end+4*ToolPairMaxScan+1)
	win := msgs[lo:hi]
	before := len(folded)
	for range 8 {
		changed := false
		calls := map[string]bool{}   // call id -> call folded
		results := map[string]bool{} // call id -> every result folded
		hasCall := map[string]bool{}
		hasResult := map[string]bool{}
		for _, m := range win {
			if m.ToolCallID == "" {
				continue
			}
			switch m.ContentType {
			case CTToolCall:
				hasCall[m.ToolCallID] = true
				calls[m.ToolCallID] = folded[m.ID]
			case CTToolResult:
				if !hasResult[m.ToolCallID] {
					results[m.ToolCallID] = true
				}
				hasResult[m.ToolCallID] = true
				results[m.ToolCallID] = results[m.ToolCallID] && folded[m.ID]
			}
		}
		for _, m := range win {
			if !folded[m.ID] || m.ToolCallID == "" {
				continue
			}
			id := m.ToolCallID
			split := false
			if m.ContentType == CTToolCall && hasResult[id] && !results[id] {
				split = true
			}
			if m.ContentType == CTToolResult && hasCall[id] && !calls[id] {
				split = true
			}
			if split {
				delete(folded, m.ID)
				changed = true
			}
		}
		var withdrawn []string
		folded, withdrawn = WithdrawSplitTurns(win, folded)
		if len(withdrawn) > 0 {
			changed = true
		}
		// The reverse split: acts folded while their reasoning run stays
		// visible would leave a thinking block with nothing after it.
		for _, g := range ComputeTurnGroups(win) {
			if len(g.ReasoningIdx) == 0 {
				continue
			}
			reasoningVisible := false
			for _, i := range g.ReasoningIdx {
				if !folded[win[i].ID] {
					reasoningVisible = true
				}
			}
			if !reasoningVisible {
				continue
			}
			for _, i := range append(append([]int(nil), g.ActIdx...), g.ResultIdx...) {
				if folded[win[i].ID] {
					delete(folded, win[i].ID)
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	return folded, before - len(folded)
}

// taskIDs are the ids of the first user message in view (firstUserSpan),
// which no range may hold, and the first ref after it ("" when none).
func taskIDs(view []CoreMessage, st CompressionState) (map[string]bool, string) {
	lo, hi := firstUserSpan(view)
	if lo < 0 {
		return nil, ""
	}
	ids := map[string]bool{}
	for _, m := range view[lo:hi] {
		ids[m.ID] = true
	}
	for _, m := range view[hi:] {
		if ref, ok := RefForRaw(st.MessageRefs, m.ID); ok && !isSynthetic(m) {
			return ids, ref
		}
	}
	return ids, ""
}

// firstIn is the first of ids in set.
func firstIn(ids []string, set map[string]bool) (string, bool) {
	for _, id := range ids {
		if set[id] {
			return id, true
		}
	}
	return "", false
}

func checkSummary(r CompressRange, cfg Config) string {
	s := strings.TrimSpace(r.Summary)
	n := utf8.RuneCountInString(s)
	if n == 0 {
		return "the summary is empty. Write the summary that will replace these messages."
	}
	if cfg.Compress.MinSummaryLength > 0 && n < cfg.Compress.MinSummaryLength {
		return fmt.Sprintf("the summary has %d characters, fewer than the minimum of %d. It is the only record of the range: include what the rules say to keep.", n, cfg.Compress.MinSummaryLength)
	}
	limit := cfg.Compress.MaxSummaryLength
	if r.SummaryMaxChars != nil && *r.SummaryMaxChars > limit {
		limit = *r.SummaryMaxChars
	}
	if limit > 0 && n > limit {
		return fmt.Sprintf("the summary has %d characters, more than the limit of %d. Drop process detail and keep decisions, facts and refs; the originals are archived.", n, limit)
	}
	return ""
}

// deadRangeKey normalises a requested range so repeats are recognised
// whatever the case, spacing or padding the model used.
func deadRangeKey(start, end string) string {
	norm := func(s string) string {
		if b, ok := ParseBoundary(s); ok {
			if b.Kind == BoundaryBlock {
				return b.BlockID
			}
			return b.Ref
		}
		return strings.ToLower(strings.TrimSpace(s))
	}
	a, b := norm(start), norm(end)
	if b < a {
		a, b = b, a
	}
	return a + ".." + b
}

func prefixAll(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
