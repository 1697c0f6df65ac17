package noa

import (
	"strings"
	"testing"
)

func TestArchiveNames(t *testing.T) {
	if got := ArchiveFileName("b12", "m00001", "m00040"); got != "b12_m00001-m00040.md" {
		t.Errorf("ArchiveFileName = %q", got)
	}
	if got := ArchiveTierDir(3); got != "tier3" {
		t.Errorf("ArchiveTierDir = %q", got)
	}
	b := CompressionBlock{BlockID: "b2", Tier: 1, StartRef: "m00003", EndRef: "m00009"}
	if got := ArchiveTag(b); !strings.Contains(got, "tier1/b2_m00003-m00009.md") || !strings.Contains(got, "b2") {
		t.Errorf("ArchiveTag without a written path = %q", got)
	}
	b.ArchiveRel = "elsewhere/b2.md"
	if got := ArchiveTag(b); !strings.Contains(got, "elsewhere/b2.md") {
		t.Errorf("ArchiveTag = %q, want the recorded relative path", got)
	}
	if !strings.HasSuffix(RenderSummaryMessage(b).Text, ArchiveTag(b)) {
		t.Errorf("the archive tag is not the last line of the summary")
	}
}

func TestRenderArchiveIsVerbatim(t *testing.T) {
	huge := strings.Repeat("line with `ticks` and ``` fences and unicode 你好 😀\n", 20000) + "no trailing newline"
	msg := CoreMessage{ID: "t1", Role: RoleTool, ContentType: CTToolResult, Text: huge}
	got := string(RenderArchive(ArchiveRenderInput{BlockID: "b1", Tier: 1, StartRef: "m00001", EndRef: "m00001", Summary: "s",
		Entries: []ArchiveEntry{{Message: &msg, Ref: "m00001"}}}))
	if !strings.Contains(got, huge) {
		t.Fatalf("the archive does not hold the %d-byte original verbatim", len(huge))
	}
	if !strings.Contains(got, "````text\n") {
		t.Errorf("the fence is not longer than the longest backtick run in the content")
	}
	// Rendering is deterministic.
	again := string(RenderArchive(ArchiveRenderInput{BlockID: "b1", Tier: 1, StartRef: "m00001", EndRef: "m00001", Summary: "s",
		Entries: []ArchiveEntry{{Message: &msg, Ref: "m00001"}}}))
	if again != got {
		t.Errorf("two renders differ")
	}
}

func TestFormatEmptyInputs(t *testing.T) {
	if got := FormatRanges(nil, nil); got != "  (no ranges)" {
		t.Errorf("FormatRanges(nil) = %q", got)
	}
	if got := FormatBlockMap(nil); got != "  (no blocks yet)" {
		t.Errorf("FormatBlockMap(nil) = %q", got)
	}
	if got := FormatTierTargetBlocks(nil); got != "  (no blocks)" {
		t.Errorf("FormatTierTargetBlocks(nil) = %q", got)
	}
	if got := FormatBreakdown(NudgeDecision{ContextUsage: 0.5, ContextBreakdown: map[string]int{"tool": 0, "text": 1500}}); got != "Context: 50% of the window — text 1.5K" {
		t.Errorf("FormatBreakdown = %q (empty buckets must be omitted)", got)
	}
	if got := PanelBlockCount(""); got != 0 {
		t.Errorf("PanelBlockCount(empty) = %d", got)
	}
}

func TestBuildSystemPrompt(t *testing.T) {
	got := BuildSystemPrompt(Sections{})
	for _, want := range []string{"# " + SystemPromptHeader, CompressPhilosophy, "MESSAGE REFS", "SUMMARIES IN CONTEXT", "ARCHIVE", CompressToolName, HowToCompressRules, Tier2Rules, Tier3Rules} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	empty, repl := "", "REPLACED SECTION"
	got = BuildSystemPrompt(Sections{SummariesInContext: &repl, Archive: &empty})
	if strings.Contains(got, "SUMMARIES IN CONTEXT") || !strings.Contains(got, repl) || strings.Contains(got, defaultArchive) {
		t.Errorf("overrides not applied:\n%s", got)
	}
}
