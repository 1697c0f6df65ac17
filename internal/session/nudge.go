package session

import (
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The MCP face of noa's texts. Over MCP the client keeps its own copy of
// the conversation, so what mcproxy once sent stays in the model's context:
// the compression rules need to travel once, not with every nudge (issue
// 17: a nudge carrying them costs 1.3-1.4K tokens, and a long session gets
// dozens). noa's RenderNudgeText points at the rules in its resident
// prompt (issue 27), which the gateway adds to every request; over MCP the
// first nudge of each tier carries the rules instead, and later ones are
// the short form written here, from the same decision.

// MCPInstructions is noa's part of the initialize instructions over MCP:
// what the tags and summaries the model will meet mean, and the brake on
// Compress. The rules for writing a summary come with the first nudge.
func MCPInstructions() string {
	return "noa manages this session's context. Results carry a tag like [m00042 · 1.2K tok]: the message's ref and size. " +
		"Call " + noa.CompressToolName + " only when a noa note asks, by the rules that note sends. " +
		"A \"" + noa.SummaryHeader + "\" is settled history; " + ReadArchiveToolName + " returns its originals."
}

// maxShortRanges is how many compressible ranges a short nudge lists; the
// rest are counted in one line.
const maxShortRanges = 6

// ShortNudge is a nudge for a session that has already been sent the rules
// of d's tier: the pressure, what to compress, and a pointer back to the
// rules. rulesAt is the ref of the message the rules were sent with ("" when
// unknown).
func ShortNudge(d noa.NudgeDecision, rulesAt string) string {
	var b strings.Builder
	b.WriteString("[noa] ")
	if d.Breakdown.Emergency {
		b.WriteString("URGENT, compress before anything else. ")
	}
	b.WriteString(noa.FormatBreakdown(d))
	if d.Breakdown.OverLimit {
		b.WriteString(" (past the pressure line)")
	}
	b.WriteString(".\n")
	rules := "HOW TO COMPRESS"
	switch d.Tier {
	case 2, 3:
		rules = fmt.Sprintf("the TIER %d rules", d.Tier)
		blocks := d.TierTargetBlocks
		if len(blocks) > 0 {
			fmt.Fprintf(&b, "Consolidate %d blocks into one tier-%d block: one Compress range, start=%s end=%s.\n",
				len(blocks), d.Tier, blocks[0].BlockID, blocks[len(blocks)-1].BlockID)
		}
	default:
		b.WriteString("Compress, oldest first, refs exactly as listed (several ranges per call):\n")
		shown, rest, restTokens := 0, 0, 0
		for _, r := range d.CompressibleRanges {
			if shown == maxShortRanges {
				rest++
				restTokens += r.Tokens
				continue
			}
			shown++
			fmt.Fprintf(&b, "  %s–%s  compressible  %d msgs  %s tok", r.StartRef, r.EndRef, r.Count, noa.FormatTokens(r.Tokens))
			if r.Dangerous {
				b.WriteString("  [CAREFUL: recent user intent]")
			}
			b.WriteString("\n")
		}
		if rest > 0 {
			fmt.Fprintf(&b, "  and %d more ranges, %s tok\n", rest, noa.FormatTokens(restTokens))
		}
	}
	where := "an earlier noa note"
	if rulesAt != "" {
		where = "the noa note after " + rulesAt
	}
	fmt.Fprintf(&b, "Write each summary by %s, sent with %s: it becomes the only record of its range.", rules, where)
	return b.String()
}

// MCPNudge is the nudge an MCP client is shown for t, which shapes the
// result tagged ref ("" when it has none): the first time the session is
// asked for a tier's work, noa's nudge with that tier's rules in place of
// its pointer to the resident prompt (which the MCP instructions do not
// carry), ShortNudge afterwards. "" when t has no nudge. Hosts remember what
// they sent while open; a reopened host sends the rules once more.
func (h *Host) MCPNudge(t Turn, ref string) string {
	if t.Nudge == "" || t.NudgeDecision == nil {
		return t.Nudge
	}
	tier := max(t.NudgeDecision.Tier, 1)
	h.nudgeMu.Lock()
	defer h.nudgeMu.Unlock()
	if at, sent := h.rulesSent[tier]; sent {
		return ShortNudge(*t.NudgeDecision, at)
	}
	if h.rulesSent == nil {
		h.rulesSent = map[noa.Tier]string{}
	}
	h.rulesSent[tier] = ref
	section, rules := "HOW TO COMPRESS", noa.HowToCompressRules
	switch tier {
	case 2:
		section, rules = "TIER 2", noa.Tier2Rules+"\n\n"+noa.HowToCompressRules
	case 3:
		section, rules = "TIER 3", noa.Tier3Rules+"\n\n"+noa.HowToCompressRules
	}
	return strings.TrimSuffix(t.Nudge, noa.NudgeRulesPointer(section)) + "Write each summary by these rules.\n\n" + rules
}
