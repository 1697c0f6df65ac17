package noa

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/<name>.golden; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v (run go test ./internal/noa -update to create it)", path, err)
	}
	if diff := cmpDiff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended run go test ./internal/noa -update and review the diff:\n%s", path, diff)
	}
}

// goldenSession is a deterministic session at the point of a tier-1 nudge.
func goldenSession(t *testing.T) (*simHost, ProcessTurnResult) {
	t.Helper()
	cfg := DefaultConfig(30000)
	cfg.ProtectedTools = []string{"memory:*"}
	h := newSimHost(t, cfg, 5)
	h.c.user(25)
	for i := 0; i < 400; i++ {
		h.c.randomTurn("memory:store")
		if r := h.turn(); r.Nudge != nil {
			return h, r
		}
	}
	t.Fatal("no nudge in 400 turns")
	return nil, ProcessTurnResult{}
}

func TestGoldenNudgeTexts(t *testing.T) {
	h, r := goldenSession(t)
	d := *r.Nudge
	_, gentle := RenderNudgeText(d, NudgeSections{})
	golden(t, "nudge_tier1_gentle", gentle)
	if r.Messages[len(r.Messages)-1].Text != gentle {
		t.Errorf("the injected nudge is not the rendered text")
	}
	golden(t, "ranges", FormatRanges(d.CompressibleRanges, d.ProtectedRanges))

	e := d
	e.Breakdown.Emergency, e.ContextUsage, e.TruncatedCount = true, 0.93, 3
	_, emergency := RenderNudgeText(e, NudgeSections{})
	golden(t, "nudge_tier1_emergency", emergency)

	// Obey three times, then ask for the tier-2 text over the blocks made.
	ar := h.obey(r.Nudge)
	if len(ar.BlocksCreated) == 0 {
		t.Fatalf("golden session: %v", ar.Errors)
	}
	before := ProjectedTokenCount(h.c.msgs[:len(h.c.msgs)-2], r.State, h.cfg, nil)
	after := ProjectedTokenCount(h.c.msgs, h.st, h.cfg, nil)
	golden(t, "panel", FormatPanel(PanelInput{Result: ar, BeforeTokens: before, AfterTokens: after, Messages: ProjectView(h.c.msgs, h.st, h.cfg)}))
	golden(t, "blockmap", FormatBlockMap(ActiveBlockSpans(h.st)))

	t2 := NudgeDecision{ShouldInject: true, Tier: 2, ContextUsage: 0.55, TierTargetBlocks: ActiveBlocks(h.st),
		ContextBreakdown: ComputeContextBreakdown(ProjectView(h.c.msgs, h.st, h.cfg), nil)}
	_, tier2 := RenderNudgeText(t2, NudgeSections{})
	golden(t, "nudge_tier2", tier2)
	golden(t, "tier_targets", FormatTierTargetBlocks(t2.TierTargetBlocks))
	t3 := t2
	t3.Tier = 3
	_, tier3 := RenderNudgeText(t3, NudgeSections{})
	golden(t, "nudge_tier3", tier3)
	golden(t, "breakdown", FormatBreakdown(t2))
}

func TestGoldenPanelWithErrors(t *testing.T) {
	in, _ := applyIn(t, rng("m00001", "m00005"), rng("b9", "m00002"), rng("m00009", "m00012"))
	res := ApplyCompression(in)
	panel := FormatPanel(PanelInput{Result: res, BeforeTokens: 5200, AfterTokens: 3100, Messages: prune(in.Messages, res.State)})
	golden(t, "panel_errors", panel)
	if PanelBlockCount(panel) != 2 {
		t.Errorf("PanelBlockCount = %d, want 2", PanelBlockCount(panel))
	}
	in.Config.Compress.MinCompressRange = 1e6
	failed := FormatPanel(PanelInput{Result: ApplyCompression(in)})
	golden(t, "panel_rejected", failed)
	if PanelBlockCount(failed) != 0 {
		t.Errorf("a rejected call's panel counts blocks")
	}

	overlapping, _ := applyIn(t, rng("m00001", "m00005"), rng("m00004", "m00007"), rng("m00009", "m00012"))
	refused := FormatPanel(PanelInput{Result: ApplyCompression(overlapping)})
	golden(t, "panel_overlap", refused)
	if PanelBlockCount(refused) != 0 {
		t.Errorf("an overlapping call's panel counts %d blocks, want 0", PanelBlockCount(refused))
	}
}

func TestGoldenSystemPromptAndArchive(t *testing.T) {
	golden(t, "system_prompt", BuildSystemPrompt(Sections{}))
	custom, empty := "TAGS\nCustom tag text.", ""
	got := BuildSystemPrompt(Sections{NoaTags: &custom, Archive: &empty})
	golden(t, "system_prompt_overridden", got)

	msg := CoreMessage{ID: "t1", Role: RoleTool, ContentType: CTToolResult, ToolName: "fetch", ToolCallID: "k1",
		Text: "line one\n```go\nfunc main() {}\n```\nline with ```` four ticks"}
	child := CompressionBlock{BlockID: "b2", Tier: 1, Topic: "child", Summary: "child summary", StartRef: "m00001", EndRef: "m00004",
		EffectiveMessageIDs: []string{"a", "b", "c", "d"}}
	archive := RenderArchive(ArchiveRenderInput{BlockID: "b5", Tier: 2, SessionID: "sess", CreatedAt: "2026-01-02T03:04:05Z",
		StartRef: "m00001", EndRef: "m00009", Topic: "consolidation", Summary: "Source: b2 (4 msgs). kept facts",
		Entries: []ArchiveEntry{{Block: &child}, {Message: &msg, Ref: "m00009"}}, OriginalTokens: 1234})
	golden(t, "archive", string(archive))
	golden(t, "summary_message", RenderSummaryMessage(CompressionBlock{BlockID: "b5", Tier: 2, Topic: "consolidation",
		Summary: "the summary", StartRef: "m00001", EndRef: "m00009"}).Text)
}
