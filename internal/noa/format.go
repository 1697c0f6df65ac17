package noa

import (
	"fmt"
	"sort"
	"strings"
)

// FormatRanges merges compressible and protected ranges into a single list
// sorted by position; two separate lists would hide how they interleave.
func FormatRanges(compressible []RangeInfo, protected []ProtectedRange) string {
	type row struct {
		key  float64
		text string
	}
	refKey := func(ref string) float64 {
		n, _ := RefToIndex(ref)
		return float64(n)
	}
	var rows []row
	for _, r := range compressible {
		var extra []string
		if r.UserMsgs > 0 {
			extra = append(extra, fmt.Sprintf("%d user msg(s)", r.UserMsgs))
		}
		if r.Dangerous {
			extra = append(extra, "CAREFUL: holds recent user intent")
		}
		t := fmt.Sprintf("  %s–%s  compressible  %d msgs  %s tok  %d chars  tool %d%% · text %d%%",
			r.StartRef, r.EndRef, r.Count, FormatTokens(r.Tokens), r.Chars, r.ToolPct, r.TextPct)
		if len(extra) > 0 {
			t += "  [" + strings.Join(extra, "; ") + "]"
		}
		rows = append(rows, row{refKey(r.StartRef), t})
	}
	for _, p := range protected {
		span := p.StartRef + "–" + p.EndRef
		key := refKey(p.StartRef)
		if p.StartRef == "" {
			if p.after != "" {
				span = "(after " + p.after + ")"
			} else {
				span = "(at start)"
			}
			key = refKey(p.after) + 0.5
		}
		why := "recent work"
		if len(p.Tools) > 0 {
			why = "protected tools: " + strings.Join(p.Tools, ", ")
		}
		rows = append(rows, row{key, fmt.Sprintf("  %s  protected  %d msgs  %s tok  %s", span, p.Count, FormatTokens(p.Tokens), why)})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].key < rows[j].key })
	if len(rows) == 0 {
		return "  (no ranges)"
	}
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = r.text
	}
	return strings.Join(lines, "\n")
}

// FormatBlockMap shows each live block with its id, so the model can use
// block ids as range endpoints.
func FormatBlockMap(spans []BlockSpan) string {
	if len(spans) == 0 {
		return "  (no blocks yet)"
	}
	lines := make([]string, 0, len(spans))
	for _, s := range spans {
		t := fmt.Sprintf("  %s(T%d)  %s–%s  %d msgs  %s→%s tok", s.BlockID, s.Tier, s.StartRef, s.EndRef, s.Count,
			FormatTokens(s.OriginalTokens), FormatTokens(s.SummaryTokens))
		if s.Topic != "" {
			t += "  " + s.Topic
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, "\n")
}

// FormatTierTargetBlocks lists the blocks a tier-2/3 nudge wants merged
// (messages, tokens before and after, topic) and ends with the one range
// spanning all of them, ready to copy into a Compress call.
func FormatTierTargetBlocks(blocks []CompressionBlock) string {
	if len(blocks) == 0 {
		return "  (no blocks)"
	}
	lines := make([]string, 0, len(blocks)+1)
	for _, b := range blocks {
		t := fmt.Sprintf("  %s  %s–%s  %d msgs  %s→%s tok", blockLabel(b), b.StartRef, b.EndRef, len(b.EffectiveMessageIDs),
			FormatTokens(b.CompressedTokens), FormatTokens(DefaultCountTokens(RenderSummaryMessage(b).Text)))
		if b.Topic != "" {
			t += "  " + b.Topic
		}
		lines = append(lines, t)
	}
	lines = append(lines, fmt.Sprintf("  Range covering all of them: start=%s end=%s", blocks[0].BlockID, blocks[len(blocks)-1].BlockID))
	return strings.Join(lines, "\n")
}

var breakdownOrder = []string{"summaries", "tool", "system", "code", "text"}

// FormatBreakdown prints window usage and the non-zero token categories.
func FormatBreakdown(d NudgeDecision) string {
	return fmt.Sprintf("Context: %.0f%% of the window", d.ContextUsage*100) + breakdownParts(d)
}

// breakdownParts is FormatBreakdown's list of categories, "" when empty.
func breakdownParts(d NudgeDecision) string {
	var parts []string
	for _, k := range breakdownOrder {
		if n := d.ContextBreakdown[k]; n > 0 {
			parts = append(parts, k+" "+FormatTokens(n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " — " + strings.Join(parts, " · ")
}

// PanelInput feeds FormatPanel, the Compress tool's answer to the model.
type PanelInput struct {
	Result ApplyResult
	// BeforeTokens and AfterTokens: context size on either side of the call.
	BeforeTokens int
	AfterTokens  int
	// Messages: the view after compressing, from which the panel learns
	// which messages inside a new block's span are still shown.
	Messages []CoreMessage
}

const panelBlockPrefix = "  + b"

// FormatPanel writes the text the Compress tool returns. Each created block is
// reported with the span it ACTUALLY covers (from its effective coverage),
// and a note when messages inside that span stayed visible, so the model's
// ledger matches what happened rather than what it asked for.
func FormatPanel(in PanelInput) string {
	r := in.Result
	if len(r.BlocksCreated) == 0 && len(r.Errors) == 0 && len(r.Warnings) == 1 && r.Warnings[0] == NoRangesMessage {
		return NoRangesMessage
	}
	var b strings.Builder
	if n := len(r.BlocksCreated); n > 0 {
		fmt.Fprintf(&b, "Compress: %d block(s) created; context %s → %s tok (%s reclaimed).\n", n,
			FormatTokens(in.BeforeTokens), FormatTokens(in.AfterTokens), FormatTokens(in.BeforeTokens-in.AfterTokens))
	} else {
		b.WriteString("Compress: nothing was compressed.\n")
	}
	visible := map[int]bool{}
	for _, m := range in.Messages {
		if isSynthetic(m) {
			continue
		}
		if ref, ok := RefForRaw(r.State.MessageRefs, m.ID); ok {
			n, _ := RefToIndex(ref)
			visible[n] = true
		}
	}
	for _, blk := range r.BlocksCreated {
		fmt.Fprintf(&b, "  + %s  %s–%s  %d msgs  %s→%s tok", blockLabel(blk),
			blk.StartRef, blk.EndRef, len(blk.EffectiveMessageIDs), FormatTokens(blk.CompressedTokens),
			FormatTokens(DefaultCountTokens(RenderSummaryMessage(blk).Text)))
		if blk.Topic != "" {
			b.WriteString("  " + blk.Topic)
		}
		b.WriteString("\n")
		lo, _ := RefToIndex(blk.StartRef)
		hi, _ := RefToIndex(blk.EndRef)
		left := 0
		for n := lo; n <= hi && lo > 0; n++ {
			if visible[n] {
				left++
			}
		}
		if left > 0 {
			fmt.Fprintf(&b, "    partial: %d message(s) inside %s–%s stay visible (protected, or kept with their turn)\n", left, blk.StartRef, blk.EndRef)
		}
		if len(blk.DirectBlockIDs) > 0 {
			fmt.Fprintf(&b, "    absorbed: %s\n", strings.Join(blk.DirectBlockIDs, ", "))
		}
		fmt.Fprintf(&b, "    archive: %s\n", archiveRel(blk))
	}
	for _, id := range r.SurvivingBlockIDs {
		fmt.Fprintf(&b, "  = %s stays active (above the tier being consolidated)\n", id)
	}
	if len(r.Errors) > 0 {
		b.WriteString("Errors (fix and call again):\n")
		for _, e := range r.Errors {
			b.WriteString("  - " + e + "\n")
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("Notes:\n")
		for _, w := range r.Warnings {
			b.WriteString("  - " + w + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// PanelBlockCount reports how many created blocks a rendered panel lists.
// A panel with none reclaimed nothing and counts as a failed attempt.
func PanelBlockCount(panel string) int {
	n := 0
	for _, line := range strings.Split(panel, "\n") {
		if strings.HasPrefix(line, panelBlockPrefix) {
			n++
		}
	}
	return n
}

// NudgeVoice is the tone of a nudge: calm advice or an urgent demand.
type NudgeVoice string

// Voices.
const (
	VoiceGentle    NudgeVoice = "gentle"
	VoiceEmergency NudgeVoice = "emergency"
)

// NudgeSections are the parts of a nudge a host can override. They only set
// tone; the summary-writing rules stay fixed because they decide quality.
type NudgeSections struct {
	EfficiencyNote  SectionOverride
	EmergencyHeader SectionOverride
	T2Guidance      SectionOverride
	T3Guidance      SectionOverride
}

const (
	defaultEfficiencyNote  = "Older, finished work can be compressed now, which keeps later requests small. Finish the step you are on first if it needs that material."
	defaultEmergencyHeader = "URGENT: the context is almost full. Compress now, before any other work; otherwise the largest messages are cut mechanically."
	defaultT2Guidance      = "Several tier-1 summaries have piled up. Distil them into one tier-2 block: one Compress call, one range from the first to the last block listed (block ids as endpoints)."
	defaultT3Guidance      = "Several tier-2 blocks have piled up. Condense them into one tier-3 block: one Compress call, one range from the first to the last block listed (block ids as endpoints)."
)

// NudgeMaxTokens bounds a nudge rendered with the default sections (issue
// 27: a nudge listing every small range reached ~8,000 characters). The
// rules live in the resident prompt (BuildSystemPrompt); a nudge only says
// what to compress now, naming at most MaxRecommendedRanges ranges or
// maxNudgeBlocks blocks.
const NudgeMaxTokens = 400

// maxNudgeBlocks, maxNudgeTools and maxNudgeTopic bound the lists and
// model-written topics a nudge repeats.
const (
	maxNudgeBlocks = 6
	maxNudgeTools  = 4
	maxNudgeTopic  = 40
)

// RenderNudgeText writes the nudge for d. It switches to the urgent voice
// from EmergencyThresholdPct on and is calm below that.
//
// Unlike the spec's nudge it carries no rules and no full range table: it
// names the few large ranges to compress in one call and points at the
// rules in the resident prompt, so it stays under NudgeMaxTokens (issue 27).
func RenderNudgeText(d NudgeDecision, s NudgeSections) (NudgeVoice, string) {
	voice := VoiceGentle
	head := section(s.EfficiencyNote, defaultEfficiencyNote)
	if d.Breakdown.Emergency {
		voice = VoiceEmergency
		head = section(s.EmergencyHeader, defaultEmergencyHeader)
	}
	var parts []string
	title := fmt.Sprintf("[noa] Context at %.0f%% of the window", d.ContextUsage*100) + breakdownParts(d) + "."
	if strings.TrimSpace(head) != "" {
		title += " " + head
	}
	parts = append(parts, title)
	if d.TruncatedCount > 0 {
		parts = append(parts, fmt.Sprintf("%d message(s) in this request were cut for space (look for %q); each cut says how to read the rest with %s. Do not re-run tools just to see them.",
			d.TruncatedCount, TruncationMarker+"]", DefaultRecallTool))
	}
	rules := "HOW TO COMPRESS"
	switch d.Tier {
	case 2, 3:
		guide := section(s.T2Guidance, defaultT2Guidance)
		rules = "TIER 2"
		if d.Tier == 3 {
			guide = section(s.T3Guidance, defaultT3Guidance)
			rules = "TIER 3"
		}
		if strings.TrimSpace(guide) != "" {
			parts = append(parts, guide)
		}
		parts = append(parts, "Blocks to consolidate:\n"+formatTierTargets(d.TierTargetBlocks))
	default:
		parts = append(parts, "Compress these ranges in ONE call (one entry each, refs exactly as listed):\n"+
			formatRecommended(d.CompressibleRanges))
		if keep := formatKept(d.CompressibleRanges, d.ProtectedRanges); keep != "" {
			parts = append(parts, keep)
		}
	}
	parts = append(parts, NudgeRulesPointer(rules))
	return voice, strings.Join(parts, "\n")
}

// NudgeRulesPointer is a nudge's last line: where the rules of the named
// section ("HOW TO COMPRESS", "TIER 2", "TIER 3") are. A host that does not
// send the resident prompt replaces it with the rules themselves.
func NudgeRulesPointer(section string) string {
	return "Write each summary by the " + section + " rules under \"" + SystemPromptHeader + "\" in your instructions."
}

// formatRecommended lists the ranges a tier-1 nudge names, one line each.
func formatRecommended(rs []RangeInfo) string {
	if len(rs) == 0 {
		return "  (no ranges)"
	}
	lines := make([]string, 0, len(rs))
	for _, r := range rs {
		t := fmt.Sprintf("  %s–%s  compressible  %s tok  %d msgs", r.StartRef, r.EndRef, FormatTokens(r.Tokens), r.Count)
		if r.Dangerous {
			t += "  (ends at recent user turns: keep their intent)"
		}
		lines = append(lines, t)
	}
	return strings.Join(lines, "\n")
}

// formatKept says in one line what no range may take: the user messages
// kept in view between the ranges, the recent zone (everything soft after
// the last range named), and the protected tools whose messages stay
// visible even inside a range.
func formatKept(rs []RangeInfo, prot []ProtectedRange) string {
	last := 0
	if n := len(rs); n > 0 {
		last, _ = RefToIndex(rs[n-1].EndRef)
	}
	var kept, tools []string
	recent := ""
	for _, p := range prot {
		if len(p.Tools) > 0 || p.StartRef == "" {
			for _, t := range p.Tools {
				if !containsStr(tools, t) {
					tools = append(tools, t)
				}
			}
			continue
		}
		if at, _ := RefToIndex(p.StartRef); at > last {
			if recent == "" {
				recent = p.StartRef + " onward (recent work)"
			}
			continue
		}
		span := p.StartRef
		if p.EndRef != p.StartRef {
			span += "–" + p.EndRef
		}
		if len(kept) < 2 {
			kept = append(kept, span+" (user message)")
		}
	}
	if recent != "" {
		kept = append(kept, recent)
	}
	var out []string
	if len(kept) > 0 {
		out = append(out, "Never compress "+strings.Join(kept, ", ")+".")
	}
	if len(tools) > 0 {
		sort.Strings(tools)
		more := ""
		if len(tools) > maxNudgeTools {
			more = fmt.Sprintf(" and %d more", len(tools)-maxNudgeTools)
			tools = tools[:maxNudgeTools]
		}
		for i, t := range tools {
			tools[i] = clip(t, maxNudgeTopic)
		}
		out = append(out, "Protected tools stay in view even inside a range: "+strings.Join(tools, ", ")+more+".")
	}
	return strings.Join(out, " ")
}

// formatTierTargets is FormatTierTargetBlocks bounded for a nudge: at most
// maxNudgeBlocks lines, topics clipped, and the covering range.
func formatTierTargets(blocks []CompressionBlock) string {
	if len(blocks) == 0 {
		return "  (no blocks)"
	}
	lines := make([]string, 0, maxNudgeBlocks+2)
	for i, b := range blocks {
		if i == maxNudgeBlocks {
			lines = append(lines, fmt.Sprintf("  ... and %d more", len(blocks)-maxNudgeBlocks))
			break
		}
		t := fmt.Sprintf("  %s  %s–%s  %s→%s tok", blockLabel(b), b.StartRef, b.EndRef,
			FormatTokens(b.CompressedTokens), FormatTokens(DefaultCountTokens(RenderSummaryMessage(b).Text)))
		if b.Topic != "" {
			t += "  " + clip(b.Topic, maxNudgeTopic)
		}
		lines = append(lines, t)
	}
	lines = append(lines, fmt.Sprintf("  Range covering all of them: start=%s end=%s", blocks[0].BlockID, blocks[len(blocks)-1].BlockID))
	return strings.Join(lines, "\n")
}

// clip shortens s to n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
