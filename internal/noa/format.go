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
	var parts []string
	for _, k := range breakdownOrder {
		if n := d.ContextBreakdown[k]; n > 0 {
			parts = append(parts, k+" "+FormatTokens(n))
		}
	}
	s := fmt.Sprintf("Context: %.0f%% of the window", d.ContextUsage*100)
	if len(parts) > 0 {
		s += " — " + strings.Join(parts, " · ")
	}
	return s
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
	defaultEfficiencyNote  = "Some older parts of this conversation are finished and can be compressed. Doing it now keeps later requests fast and cheap; it is a suggestion, so finish the step you are on first if it needs the material."
	defaultEmergencyHeader = "URGENT: the context is almost full. Compress now, before any other work. If the window overflows, the largest tool outputs will be cut mechanically and the request may be rejected."
	defaultT2Guidance      = "Several tier-1 summaries have piled up. Distil them into one tier-2 block: call Compress with a single range from the first to the last block listed (block ids as endpoints) and write the summary by the TIER 2 rules."
	defaultT3Guidance      = "Several tier-2 blocks have piled up. Condense them into one tier-3 block: call Compress with a single range from the first to the last block listed (block ids as endpoints) and write the summary by the TIER 3 rules."
)

// RenderNudgeText writes the nudge for d. It switches to the urgent voice
// from EmergencyThresholdPct on and is calm below that.
func RenderNudgeText(d NudgeDecision, s NudgeSections) (NudgeVoice, string) {
	voice := VoiceGentle
	head := section(s.EfficiencyNote, defaultEfficiencyNote)
	if d.Breakdown.Emergency {
		voice = VoiceEmergency
		head = section(s.EmergencyHeader, defaultEmergencyHeader)
	}
	var parts []string
	title := fmt.Sprintf("[noa] Context at %.0f%% of the window.", d.ContextUsage*100)
	if strings.TrimSpace(head) != "" {
		title += " " + head
	}
	parts = append(parts, title)
	if d.TruncatedCount > 0 {
		parts = append(parts, fmt.Sprintf("%d tool result(s) in this request were shortened for space (look for %q). "+
			"The full outputs are still recorded; do not run those tools again just to see them.", d.TruncatedCount, TruncationMarker+"]"))
	}
	parts = append(parts, FormatBreakdown(d))
	switch d.Tier {
	case 2, 3:
		guide := section(s.T2Guidance, defaultT2Guidance)
		rules := Tier2Rules
		if d.Tier == 3 {
			guide = section(s.T3Guidance, defaultT3Guidance)
			rules = Tier3Rules
		}
		if strings.TrimSpace(guide) != "" {
			parts = append(parts, guide)
		}
		parts = append(parts, "Blocks to consolidate:\n"+FormatTierTargetBlocks(d.TierTargetBlocks))
		parts = append(parts, rules, HowToCompressRules)
	default:
		parts = append(parts, "Compress these ranges, oldest first; several ranges can go in one Compress call. Use the refs exactly as listed:\n"+
			FormatRanges(d.CompressibleRanges, d.ProtectedRanges))
		if len(d.ActiveBlockSpans) > 0 {
			parts = append(parts, "Existing blocks (leave them alone unless asked):\n"+FormatBlockMap(d.ActiveBlockSpans))
		}
		parts = append(parts, HowToCompressRules)
	}
	parts = append(parts, "These rules are also summarised under \""+SystemPromptHeader+"\" in your instructions.")
	return voice, strings.Join(parts, "\n\n")
}
