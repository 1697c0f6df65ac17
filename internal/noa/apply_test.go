package noa

import (
	"strings"
	"testing"
)

func applyView() []CoreMessage {
	return []CoreMessage{
		txt("u1", RoleSystem, "please investigate "+long("timeout", 30)), // m00001 (a system text: the first user message, the task, is never compressed)
		think("r1", "plan "+long("think", 10)),                           // m00002
		call("c1", "k1", "fetch"),                                        // m00003
		result("t1", "k1", "fetch", "page one "+long("alpha", 60)),       // m00004
		txt("a1", RoleAssistant, "found "+long("beta", 20)),              // m00005
		call("c2", "k2", "fetch"),                                        // m00006
		result("t2", "k2", "fetch", "page two "+long("gamma", 60)),       // m00007
		txt("u2", RoleUser, "now fix it"),                                // m00008
		call("c3", "k3", "fetch"),                                        // m00009
		result("t3", "k3", "fetch", "page three "+long("delta", 60)),     // m00010
		txt("a2", RoleAssistant, "fixed"),                                // m00011
		txt("u3", RoleUser, "thanks"),                                    // m00012
	}
}

func applyIn(t *testing.T, ranges ...CompressRange) (ApplyInput, *memArchiver) {
	t.Helper()
	msgs := applyView()
	cfg := testConfig()
	arch := newMemArchiver()
	return ApplyInput{Ranges: ranges, Messages: msgs, State: stateFor(msgs, cfg), Config: cfg, CallID: "call-1",
		Archiver: arch, CreatedAt: "2026-01-02T03:04:05Z", Now: 1767323045}, arch
}

func rng(start, end string) CompressRange {
	return CompressRange{StartRef: start, EndRef: end, Summary: okSummary + " for " + start + ".." + end, Topic: "topic " + start}
}

func TestApplyCompressionCreatesBlock(t *testing.T) {
	in, arch := applyIn(t, rng("m00001", "m00005"))
	before := CloneState(in.State)
	msgsBefore := deepCopyMsgs(in.Messages)
	res := ApplyCompression(in)
	if len(res.Errors) != 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	if diff := cmpDiff(before, in.State); diff != "" {
		t.Fatalf("input state mutated:\n%s", diff)
	}
	if diff := cmpDiff(msgsBefore, in.Messages); diff != "" {
		t.Fatalf("input messages mutated:\n%s", diff)
	}
	if len(res.BlocksCreated) != 1 {
		t.Fatalf("got %d blocks", len(res.BlocksCreated))
	}
	b := res.BlocksCreated[0]
	want := CompressionBlock{
		BlockID: "b1", Tier: 1, Topic: "topic m00001", Summary: okSummary + " for m00001..m00005",
		DirectMessageIDs:    []string{"u1", "r1", "c1", "t1", "a1"},
		EffectiveMessageIDs: []string{"u1", "r1", "c1", "t1", "a1"},
		ArchivePath:         "/archive/tier1/b1_m00001-m00005.md", ArchiveRel: "tier1/b1_m00001-m00005.md",
		CompressedTokens: b.CompressedTokens, StartRef: "m00001", EndRef: "m00005", CreatedAt: 1767323045,
		Active: true, CompressCallID: "call-1",
	}
	if diff := cmpDiff(want, b); diff != "" {
		t.Errorf("block (-want +got):\n%s", diff)
	}
	if b.CompressedTokens <= 0 || res.TokensCompressed != b.CompressedTokens {
		t.Errorf("CompressedTokens %d, TokensCompressed %d", b.CompressedTokens, res.TokensCompressed)
	}
	if res.State.NextBlockID != 2 || res.State.Stats.Compressions != 1 || res.State.Stats.BlocksCreated != 1 {
		t.Errorf("state counters: next %d, stats %+v", res.State.NextBlockID, res.State.Stats)
	}
	archive := arch.snapshot()[b.ArchivePath]
	for _, m := range in.Messages[:5] {
		if !strings.Contains(archive, m.Text) {
			t.Errorf("archive lacks the verbatim text of %s", m.ID)
		}
	}
	// The pruned view now shows the summary in place of the five messages.
	view := prune(in.Messages, res.State)
	if view[0].ID != SummaryMessageID("b1") || len(view) != len(in.Messages)-4 {
		t.Errorf("pruned view: %v", idsOf(view))
	}
}

func TestApplyCompressionProtection(t *testing.T) {
	in, _ := applyIn(t, rng("m00009", "m00012"))
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 1 {
		t.Fatalf("errors %v", res.Errors)
	}
	if diff := cmpDiff([]string{"c3", "t3", "a2"}, res.BlocksCreated[0].DirectMessageIDs); diff != "" {
		t.Errorf("the last user message must stay (-want +got):\n%s", diff)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "1 message(s) in the range stay visible") {
		t.Errorf("warnings %q lack the protection note", res.Warnings)
	}

	// A hard-protected tool inside the range is left out, with its pair.
	msgs := applyView()
	msgs[5].ToolName, msgs[6].ToolName = "memory:store", "memory:store"
	cfg := testConfig()
	cfg.ProtectedTools = []string{"memory:*"}
	in2 := ApplyInput{Ranges: []CompressRange{rng("m00001", "m00005")}, Messages: msgs, State: stateFor(msgs, cfg), Config: cfg, Archiver: newMemArchiver()}
	if in2.State.MessageRefs.ByRaw["c2"] != BlockedRef || in2.State.MessageRefs.ByRaw["t2"] != BlockedRef {
		t.Fatalf("protected exchange got refs")
	}
	res = ApplyCompression(in2)
	if len(res.BlocksCreated) != 1 {
		t.Fatalf("errors %v", res.Errors)
	}
	if diff := cmpDiff([]string{"u1", "r1", "c1", "t1", "a1"}, res.BlocksCreated[0].DirectMessageIDs); diff != "" {
		t.Errorf("direct (-want +got):\n%s", diff)
	}
	if view := prune(msgs, res.State); view[1].ID != "c2" || view[2].ID != "t2" {
		t.Errorf("protected exchange not kept after the summary: %v", idsOf(view))
	}
}

func TestFormatPanelPartialCoverage(t *testing.T) {
	msgs := append(applyView(), txt("a3", RoleAssistant, "after the user"))
	cfg := testConfig()
	in := ApplyInput{Ranges: []CompressRange{rng("m00009", "m00013")}, Messages: msgs, State: stateFor(msgs, cfg), Config: cfg, Archiver: newMemArchiver()}
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 1 {
		t.Fatalf("errors %v", res.Errors)
	}
	b := res.BlocksCreated[0]
	if b.StartRef != "m00009" || b.EndRef != "m00013" {
		t.Errorf("span %s..%s", b.StartRef, b.EndRef)
	}
	panel := FormatPanel(PanelInput{Result: res, BeforeTokens: 1000, AfterTokens: 400, Messages: prune(msgs, res.State)})
	if !strings.Contains(panel, "partial: 1 message(s) inside m00009–m00013 stay visible") {
		t.Errorf("panel does not report the last user message left inside the span:\n%s", panel)
	}
	if PanelBlockCount(panel) != 1 {
		t.Errorf("PanelBlockCount = %d, want 1", PanelBlockCount(panel))
	}
}

func TestApplyCompressionInBatchOverlap(t *testing.T) {
	in, arch := applyIn(t, rng("m00001", "m00005"), rng("m00004", "m00007"), rng("m00009", "m00011"))
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 0 || len(arch.paths()) != 0 {
		t.Fatalf("an overlapping batch made %d blocks and %d archives, want none", len(res.BlocksCreated), len(arch.paths()))
	}
	if len(ActiveBlocks(res.State)) != 0 || res.State.NextBlockID != in.State.NextBlockID {
		t.Errorf("state changed: %d active blocks, next block id %d, want 0 and %d", len(ActiveBlocks(res.State)), res.State.NextBlockID, in.State.NextBlockID)
	}
	joined := strings.Join(res.Errors, "\n")
	for _, want := range []string{"range 2 (m00004..m00007) overlaps range 1 (m00001..m00005)", "nothing was compressed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors %q, want them to contain %q", res.Errors, want)
		}
	}
}

func TestApplyCompressionSizeGate(t *testing.T) {
	in, arch := applyIn(t, rng("m00001", "m00005"), rng("m00009", "m00011"))
	in.Config.Compress.MinCompressRange = 100000
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 0 || len(arch.paths()) != 0 {
		t.Fatalf("a batch under the floor wrote %d blocks and %d archives", len(res.BlocksCreated), len(arch.paths()))
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "at least 100000") {
		t.Errorf("errors %q", res.Errors)
	}
	if res.State.Stats.ConsecutiveFailures != 1 || len(res.State.Blocks) != 0 {
		t.Errorf("state after rejection: %+v", res.State.Stats)
	}
}

func TestApplyCompressionArchiveFailureRollsBack(t *testing.T) {
	for _, failOn := range []int{1, 2, 3} {
		in, arch := applyIn(t, rng("m00001", "m00005"), rng("m00006", "m00007"), rng("m00009", "m00011"))
		arch.failOn[failOn] = true
		before := CloneState(in.State)
		res := ApplyCompression(in)
		if diff := cmpDiff(before, res.State); diff != "" {
			t.Errorf("fail on write %d: state changed (-before +after):\n%s", failOn, diff)
		}
		if len(res.BlocksCreated) != 0 || len(arch.paths()) != 0 {
			t.Errorf("fail on write %d: %d blocks, archives left %v", failOn, len(res.BlocksCreated), arch.paths())
		}
		if got, want := len(arch.removed), failOn-1; got != want {
			t.Errorf("fail on write %d: removed %d archives, want %d", failOn, got, want)
		}
		if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "disk full") || !strings.Contains(res.Errors[0], "no state changed") {
			t.Errorf("fail on write %d: errors %q", failOn, res.Errors)
		}
	}
}

func TestApplyCompressionDeadRangeRepeat(t *testing.T) {
	in, _ := applyIn(t, rng("m00090", "m00095"))
	for i, want := range []string{"does not name", "does not name", "already failed 2 times", "already failed 3 times"} {
		res := ApplyCompression(in)
		if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], want) {
			t.Errorf("attempt %d: errors %q, want %q", i+1, res.Errors, want)
		}
		in.State = res.State
	}
	// The key is normalised: case, padding and order do not dodge it.
	in.Ranges = []CompressRange{rng(" M95", "m90")}
	if res := ApplyCompression(in); !strings.Contains(strings.Join(res.Errors, ""), "already failed") {
		t.Errorf("normalised repeat not recognised: %q", res.Errors)
	}
	if in.State.Stats.ConsecutiveFailures != 4 {
		t.Errorf("ConsecutiveFailures = %d, want 4", in.State.Stats.ConsecutiveFailures)
	}
}

func TestApplyCompressionSummaryBounds(t *testing.T) {
	max := 10000
	for _, tc := range []struct {
		name    string
		summary string
		maxOver *int
		want    string
	}{
		{"empty", "   ", nil, "summary is empty"},
		{"short", "tiny", nil, "fewer than the minimum"},
		{"long", strings.Repeat("x", 20001), nil, "more than the limit of 20000"},
		{"raised", strings.Repeat("x", 9000) + " " + okSummary, &max, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rng("m00001", "m00005")
			r.Summary, r.SummaryMaxChars = tc.summary, tc.maxOver
			in, _ := applyIn(t, r)
			in.Config.Compress.MaxSummaryLength = 20000
			if tc.name == "raised" {
				in.Config.Compress.MaxSummaryLength = 100
			}
			res := ApplyCompression(in)
			got := strings.Join(res.Errors, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApplyCompressionEdgeCases(t *testing.T) {
	in, _ := applyIn(t)
	res := ApplyCompression(in)
	if len(res.Errors) != 0 || res.State.Stats.ConsecutiveFailures != 0 || FormatPanel(PanelInput{Result: res}) != NoRangesMessage {
		t.Errorf("no ranges: errors %q failures %d", res.Errors, res.State.Stats.ConsecutiveFailures)
	}
	in, _ = applyIn(t, rng("m00001", "m00005"))
	in.Archiver = nil
	before := CloneState(in.State)
	res = ApplyCompression(in)
	if len(res.Errors) != 1 || len(res.BlocksCreated) != 0 || cmpDiff(before, res.State) != "" {
		t.Errorf("no archiver: %q", res.Errors)
	}
	in, _ = applyIn(t, rng("m00001", "m00005"))
	first := ApplyCompression(in)
	in.State = first.State
	in.Messages = prune(in.Messages, first.State)
	res = ApplyCompression(in)
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "already compressed") {
		t.Errorf("compressing twice: %q", res.Errors)
	}
}

func TestApplyCompressionTiers(t *testing.T) {
	in, arch := applyIn(t, rng("m00001", "m00005"), rng("m00006", "m00007"))
	first := ApplyCompression(in)
	if len(first.BlocksCreated) != 2 {
		t.Fatalf("setup: %q", first.Errors)
	}
	view := prune(in.Messages, first.State)
	in2 := in
	in2.State, in2.Messages, in2.CallID = first.State, view, "call-2"
	in2.Ranges = []CompressRange{{StartRef: "b1", EndRef: "b2(T1)", Summary: "Source: b1+b2. distilled facts kept here", Topic: "merged"}}
	res := ApplyCompression(in2)
	if len(res.BlocksCreated) != 1 {
		t.Fatalf("consolidation: %q", res.Errors)
	}
	b := res.BlocksCreated[0]
	if b.Tier != 2 || b.BlockID != "b3" || len(b.DirectMessageIDs) != 0 {
		t.Errorf("got %s tier %d direct %v", b.BlockID, b.Tier, b.DirectMessageIDs)
	}
	if diff := cmpDiff([]string{"b1", "b2"}, b.DirectBlockIDs); diff != "" {
		t.Errorf("absorbed (-want +got):\n%s", diff)
	}
	if len(b.EffectiveMessageIDs) != 7 || b.StartRef != "m00001" || b.EndRef != "m00007" {
		t.Errorf("effective %v span %s..%s", b.EffectiveMessageIDs, b.StartRef, b.EndRef)
	}
	for _, id := range []string{"b1", "b2"} {
		if FindBlock(&res.State, id).Active {
			t.Errorf("%s still active", id)
		}
	}
	archive := arch.snapshot()[b.ArchivePath]
	if !strings.Contains(archive, okSummary+" for m00001..m00005") || !strings.Contains(archive, "### block b2") {
		t.Errorf("tier-2 archive lacks the absorbed summaries:\n%s", archive)
	}
	// The consolidated block's own Compress call is kept; the absorbed
	// ones are consumed and hidden.
	hist := append(deepCopyMsgs(in.Messages), call("cc1", "call-1", CompressToolName), result("cr1", "call-1", CompressToolName, "panel"),
		call("cc2", "call-2", CompressToolName), result("cr2", "call-2", CompressToolName, "panel"))
	got := idsOf(hideCompressCalls(prune(hist, res.State), res.State))
	if strings.Contains(strings.Join(got, ","), "cc1") || !strings.Contains(strings.Join(got, ","), "cc2") {
		t.Errorf("compress calls in view: %v", got)
	}
}

func TestDecideTier(t *testing.T) {
	st := CreateInitialState("s", "/a")
	st.Blocks = []CompressionBlock{
		{BlockID: "b1", Tier: 1, Active: true, EffectiveMessageIDs: []string{"x1"}},
		{BlockID: "b2", Tier: 2, Active: true, EffectiveMessageIDs: []string{"x2"}},
		{BlockID: "b3", Tier: 3, Active: true, EffectiveMessageIDs: []string{"x3"}},
		{BlockID: "b4", Tier: 3, Active: true, EffectiveMessageIDs: []string{"x4"}},
		{BlockID: "b5", Tier: 1, Active: false},
	}
	st.MessageRefs = MessageRefMap{ByRaw: map[string]string{"loose": "m00009"}, ByRef: map[string]string{"m00009": "loose"}}
	cfg := DefaultConfig(100000)
	cfg2 := cfg
	cfg2.Tiers.MaxTier = 2
	off := cfg
	off.Tiers.Enabled = false
	for _, tc := range []struct {
		name string
		r    ResolvedRange
		cfg  Config
		want TierDecision
	}{
		{"raw only", ResolvedRange{Kind: BoundaryMessage, MessageIDs: []string{"loose"}}, cfg, TierDecision{TargetTier: 0, OutputTier: 1}},
		{"raw around a block", ResolvedRange{Kind: BoundaryMessage, MessageIDs: []string{"loose"}, NestedBlockIDs: []string{"b1"}}, cfg,
			TierDecision{TargetTier: 0, OutputTier: 1, SurvivingBlockIDs: []string{"b1"}}},
		{"lowest tier absorbed", ResolvedRange{Kind: BoundaryBlock, NestedBlockIDs: []string{"b1", "b2"}}, cfg,
			TierDecision{TargetTier: 1, OutputTier: 2, ConsumedBlockIDs: []string{"b1"}, SurvivingBlockIDs: []string{"b2"}}},
		{"loose swept in a block range", ResolvedRange{Kind: BoundaryBlock, MessageIDs: []string{"loose"}, NestedBlockIDs: []string{"b2", "b3"}}, cfg,
			TierDecision{TargetTier: 2, OutputTier: 3, ConsumedBlockIDs: []string{"b2"}, SurvivingBlockIDs: []string{"b3"}}},
		{"terminal", ResolvedRange{Kind: BoundaryBlock, NestedBlockIDs: []string{"b3", "b4"}}, cfg,
			TierDecision{TargetTier: 3, OutputTier: 3, ConsumedBlockIDs: []string{"b3", "b4"}}},
		{"capped at MaxTier 2", ResolvedRange{Kind: BoundaryBlock, NestedBlockIDs: []string{"b2"}}, cfg2,
			TierDecision{TargetTier: 2, OutputTier: 2, ConsumedBlockIDs: []string{"b2"}}},
		{"tiers off", ResolvedRange{Kind: BoundaryBlock, NestedBlockIDs: []string{"b1", "b2"}}, off,
			TierDecision{TargetTier: 1, OutputTier: 1, ConsumedBlockIDs: []string{"b1", "b2"}}},
		{"inactive ignored", ResolvedRange{Kind: BoundaryBlock, NestedBlockIDs: []string{"b5"}}, cfg, TierDecision{TargetTier: 0, OutputTier: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmpDiff(tc.want, DecideTier(tc.r, st, tc.cfg)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if !IsTerminalRewrite(TierDecision{TargetTier: 3, OutputTier: 3}, 0, cfg) {
		t.Errorf("tier-3 into tier-3 without new messages is terminal")
	}
	if IsTerminalRewrite(TierDecision{TargetTier: 3, OutputTier: 3}, 2, cfg) {
		t.Errorf("new messages make it not terminal")
	}
	if IsTerminalRewrite(TierDecision{TargetTier: 2, OutputTier: 3}, 0, cfg) {
		t.Errorf("tier 2 into 3 is progress")
	}
	if !IsTerminalRewrite(TierDecision{TargetTier: 2, OutputTier: 2}, 0, cfg2) {
		t.Errorf("MaxTier 2: tier 2 into 2 is terminal")
	}
	if IsTerminalRewrite(TierDecision{TargetTier: 0, OutputTier: 1}, 0, cfg) {
		t.Errorf("raw compression is never terminal")
	}
}

func TestApplyCompressionTerminalRewrite(t *testing.T) {
	in, _ := applyIn(t, rng("m00001", "m00005"), rng("m00006", "m00007"))
	in.Config.Tiers.MaxTier = 2
	first := ApplyCompression(in)
	view := prune(in.Messages, first.State)
	in.State, in.Messages = first.State, view
	in.Ranges = []CompressRange{{StartRef: "b1", EndRef: "b2", Summary: okSummary}}
	second := ApplyCompression(in)
	if len(second.BlocksCreated) != 1 || second.BlocksCreated[0].Tier != 2 {
		t.Fatalf("tier 2: %q", second.Errors)
	}
	// Now one tier-2 block (terminal at MaxTier 2): rewriting it alone is
	// rejected.
	in.State, in.Messages = second.State, prune(applyView(), second.State)
	in.Ranges = []CompressRange{{StartRef: "b3", EndRef: "b3", Summary: okSummary}}
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 0 || !strings.Contains(strings.Join(res.Errors, ""), "top tier") {
		t.Errorf("terminal rewrite: blocks %d errors %q", len(res.BlocksCreated), res.Errors)
	}
}

func TestApplyCompressionWarnsOnTruncatedInput(t *testing.T) {
	in, _ := applyIn(t, rng("m00001", "m00005"))
	in.Messages = deepCopyMsgs(in.Messages)
	in.Messages[3].Text = "head " + TruncationMarker + ": 10 characters removed] tail"
	res := ApplyCompression(in)
	if len(res.BlocksCreated) != 1 || !strings.Contains(strings.Join(res.Warnings, ""), "arrived already shortened") {
		t.Errorf("blocks %d warnings %q", len(res.BlocksCreated), res.Warnings)
	}
}
