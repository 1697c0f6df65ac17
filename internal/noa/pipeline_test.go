package noa

import (
	"strings"
	"testing"
)

func TestTurnNodeOrder(t *testing.T) {
	var got []string
	for _, n := range turnNodes {
		got = append(got, n.Name())
	}
	want := []string{"assign-refs", "prune", "hide-compress-calls", "emergency-truncate", "nudge-inject"}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("node order (-want +got):\n%s", diff)
	}
}

type recNode struct {
	name string
	on   bool
	log  *[]string
}

func (n recNode) Name() string                         { return n.name }
func (n recNode) Enabled(NodeIO, PipelineContext) bool { return n.on }
func (n recNode) Run(io NodeIO, _ PipelineContext) NodeIO {
	*n.log = append(*n.log, n.name)
	io.TruncatedCount++
	return io
}

func TestRunPipeline(t *testing.T) {
	var log []string
	out := RunPipeline([]PipelineNode{recNode{"a", true, &log}, recNode{"b", false, &log}, recNode{"c", true, &log}}, NodeIO{}, PipelineContext{})
	if diff := cmpDiff([]string{"a", "c"}, log); diff != "" || out.TruncatedCount != 2 {
		t.Errorf("ran %v, count %d; disabled nodes must be skipped", log, out.TruncatedCount)
	}
}

func TestProcessTurnIsPure(t *testing.T) {
	c := newConvo(3)
	for len(c.msgs) < 300 {
		c.randomTurn("memory:store")
	}
	c.tool("fetch", 3000)
	cfg := DefaultConfig(20000)
	cfg.ProtectedTools = []string{"memory:*"}
	st := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: CreateInitialState("s", "/a"), Config: cfg, TokenCount: 1}).State
	ar := ApplyCompression(ApplyInput{Ranges: []CompressRange{rng("m00001", "m00060")}, Messages: ProjectView(c.msgs, st, cfg), State: st, Config: cfg, Archiver: newMemArchiver()})
	if len(ar.BlocksCreated) != 1 {
		t.Fatalf("setup: %v", ar.Errors)
	}
	st = ar.State
	msgsBefore, stBefore := deepCopyMsgs(c.msgs), CloneState(st)
	in := ProcessTurnInput{Messages: c.msgs, State: st, Config: cfg, TokenCount: 19900}
	a := ProcessTurn(in)
	b := ProcessTurn(in)
	if diff := cmpDiff(msgsBefore, c.msgs); diff != "" {
		t.Fatalf("input messages mutated:\n%s", diff)
	}
	if diff := cmpDiff(stBefore, st); diff != "" {
		t.Fatalf("input state mutated:\n%s", diff)
	}
	if diff := cmpDiff(a, b); diff != "" {
		t.Fatalf("same input, different output:\n%s", diff)
	}
	if a.Nudge == nil || a.TruncatedCount == 0 {
		t.Fatalf("fixture should exercise nudge and truncation: nudge %v truncated %d", a.Nudge != nil, a.TruncatedCount)
	}
	// Mutating the result must not reach the input either.
	a.State.MessageRefs.ByRaw["zzz"] = "m99999"
	a.State.Blocks[0].Summary = "changed"
	if diff := cmpDiff(stBefore, st); diff != "" {
		t.Fatalf("result aliases the input state:\n%s", diff)
	}
}

func TestProcessTurnProjection(t *testing.T) {
	msgs := append(applyView(),
		result("orphan", "gone", "fetch", "a result whose call is not in the history"),
		call("inflight", "k9", "fetch"))
	cfg := testConfig()
	st := stateFor(msgs, cfg)
	ar := ApplyCompression(ApplyInput{Ranges: []CompressRange{rng("m00001", "m00005")}, Messages: ProjectView(msgs, st, cfg), State: st, Config: cfg, Archiver: newMemArchiver()})
	r := ProcessTurn(ProcessTurnInput{Messages: msgs, State: ar.State, Config: cfg, TokenCount: 1})
	got := idsOf(r.Messages)
	want := []string{SummaryMessageID("b1"), "c2", "t2", "u2", "c3", "t3", "a2", "u3", "inflight"}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("view (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(r.Messages[0].Text, SummaryHeader) || !strings.Contains(r.Messages[0].Text, ArchiveTag(ar.BlocksCreated[0])) {
		t.Errorf("summary message:\n%s", r.Messages[0].Text)
	}
	if r.Nudge != nil {
		t.Errorf("nudged at 1 token")
	}
	// The measured size is what ProjectedTokenCount reports.
	if got, want := ProjectedTokenCount(msgs, ar.State, cfg, nil), sizeOf(r.Messages); got != want {
		t.Errorf("ProjectedTokenCount = %d, want %d (the pruned view)", got, want)
	}
	if ProjectedTokenCount(msgs, ar.State, cfg, nil) >= ProjectedTokenCount(msgs, st, cfg, nil) {
		t.Errorf("compression did not lower the projected count")
	}
	// A stale summary handed back in by the host is replaced, not doubled.
	again := ProcessTurn(ProcessTurnInput{Messages: append(deepCopyMsgs(r.Messages[:1]), msgs...), State: r.State, Config: cfg, TokenCount: 1})
	if n := strings.Count(strings.Join(idsOf(again.Messages), ","), SummaryIDPrefix); n != 1 {
		t.Errorf("got %d summaries, want 1", n)
	}
	// A host message that merely looks like a summary id is kept.
	fake := CoreMessage{ID: SummaryIDPrefix + "b1", Role: RoleAssistant, ContentType: CTText, Text: "not ours"}
	if isRenderedSummaryMessage(fake) || isSynthetic(fake) {
		t.Errorf("a host message was taken for a rendered summary")
	}
}

func TestProcessTurnNudgeAndSuppression(t *testing.T) {
	c := newConvo(9)
	c.user(20)
	for len(c.msgs) < 200 {
		c.tool("fetch", 150)
	}
	cfg := DefaultConfig(40000)
	st := CreateInitialState("s", "/a")
	r := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: st, Config: cfg, TokenCount: 32000})
	if r.Nudge == nil || r.Nudge.Tier != 1 {
		t.Fatalf("no tier-1 nudge under pressure: %+v", r.Nudge)
	}
	last := r.Messages[len(r.Messages)-1]
	if last.ID != NudgeMessageID || last.Role != RoleUser || !strings.Contains(last.Text, "HOW TO COMPRESS rules") || strings.Contains(last.Text, HowToCompressRules) {
		t.Errorf("nudge message: %+v", last.ID)
	}
	if _, ok := r.State.MessageRefs.ByRaw[NudgeMessageID]; ok {
		t.Errorf("the nudge got a ref")
	}
	if r.State.Nudge.LastNudgeShownTokens != 32000 || r.State.Nudge.LastShownByTier[1] != 32000 || r.State.Stats.ConsecutiveFailures != 1 {
		t.Errorf("nudge bookkeeping: %+v %+v", r.State.Nudge, r.State.Stats)
	}
	// The model ignores it: after MaxCompressAttempts nudges it is suppressed
	// until the context grows by a cadence step.
	st = r.State
	tokens := 32000
	shown := 1
	for i := 0; i < 6; i++ {
		r = ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: st, Config: cfg, TokenCount: tokens})
		st = r.State
		if r.Nudge != nil {
			shown++
		}
	}
	if shown != cfg.MaxCompressAttempts {
		t.Errorf("got %d nudges while ignored, want %d", shown, cfg.MaxCompressAttempts)
	}
	tokens += NudgeGrowthFloor(cfg)
	r = ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: st, Config: cfg, TokenCount: tokens})
	if r.Nudge == nil {
		t.Errorf("suppression did not lift after growing by a cadence step")
	}
	// RunPruneOnly never nudges or truncates.
	view, _ := RunPruneOnly(c.msgs, st, cfg)
	if len(view) != len(c.msgs) || view[len(view)-1].ID == NudgeMessageID {
		t.Errorf("RunPruneOnly changed more than coverage")
	}
}

func TestHideCompressCalls(t *testing.T) {
	var msgs []CoreMessage
	for i := 1; i <= 5; i++ {
		id := "k" + itoa(i)
		args := compressArgsJSON([]CompressRange{{StartRef: "m1", EndRef: "m2", Summary: strings.Repeat("s", 500)}})
		msgs = append(msgs, CoreMessage{ID: "cc" + itoa(i), Role: RoleAssistant, ContentType: CTToolCall, ToolName: CompressToolName, ToolCallID: id, Text: args},
			result("cr"+itoa(i), id, CompressToolName, "panel "+itoa(i)))
	}
	st := CreateInitialState("s", "/a")
	st.Blocks = []CompressionBlock{
		{BlockID: "b1", CompressCallID: "k1", Active: false}, // consumed
		{BlockID: "b2", CompressCallID: "k2", Active: true},  // active
	}
	// k3, k4, k5 formed no block: only the last two stay.
	got := hideCompressCalls(msgs, st)
	if diff := cmpDiff([]string{"cc2", "cr2", "cc4", "cr4", "cc5", "cr5"}, idsOf(got)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	stub := ParseCompressArgs([]byte(got[0].Text))
	if !stub.Diagnostics.Ok || len([]rune(stub.Ranges[0].Summary)) > SummaryStubChars+80 || !strings.HasPrefix(stub.Ranges[0].Summary, strings.Repeat("s", SummaryStubChars)) {
		t.Errorf("active call's summary not stubbed: %q", got[0].Text)
	}
	if got[2].Text != msgs[6].Text {
		t.Errorf("an orphaned call was altered")
	}
	if msgs[2].Text == got[0].Text {
		t.Errorf("input aliasing")
	}
	if s := stubCompressArgs("not json " + strings.Repeat("x", 400)); len([]rune(s)) > SummaryStubChars+80 {
		t.Errorf("unparseable args not cut: %d", len(s))
	}
}

func TestTruncateLargeToolOutputs(t *testing.T) {
	cfg := testConfig() // 100K window, threshold 0.95
	msgs := []CoreMessage{
		txt("u", RoleUser, "go"),
		call("c1", "k1", "fetch"), result("big", "k1", "fetch", long("aaaa", 20000)),
		call("c2", "k2", "fetch"), result("mid", "k2", "fetch", long("bbbb", 8000)),
		call("c3", "k3", CompressToolName), result("cmp", "k3", CompressToolName, long("cccc", 30000)),
		call("c4", "k4", "fetch"), result("small", "k4", "fetch", "tiny"),
	}
	before := deepCopyMsgs(msgs)
	if r := TruncateLargeToolOutputs(msgs, 90000, cfg, nil); r.TruncatedCount != 0 || &r.Messages[0] != &msgs[0] {
		t.Errorf("below the threshold something was cut")
	}
	r := TruncateLargeToolOutputs(msgs, 110000, cfg, nil)
	if diff := cmpDiff(before, msgs); diff != "" {
		t.Fatalf("input mutated:\n%s", diff)
	}
	if r.TruncatedCount != 1 || r.SavedTokens < 110000-85500 {
		t.Errorf("truncated %d, saved %d", r.TruncatedCount, r.SavedTokens)
	}
	if diff := cmpDiff(idsOf(before), idsOf(r.Messages)); diff != "" {
		t.Errorf("identity changed:\n%s", diff)
	}
	big := r.Messages[2].Text
	if !strings.Contains(big, TruncationMarker) || !strings.HasPrefix(big, "aaaa") || !strings.HasSuffix(big, "aaaa") {
		t.Errorf("largest result not cut head/tail")
	}
	if r.Messages[6].Text != msgs[6].Text || r.Messages[8].Text != "tiny" {
		t.Errorf("Compress or small results were cut")
	}
	// A second pass does not cut an already-cut result again.
	r2 := TruncateLargeToolOutputs(r.Messages, 110000, cfg, nil)
	if r2.Messages[2].Text != big {
		t.Errorf("already truncated output was cut again")
	}
	cfg.Truncate.Threshold = 0
	if r := TruncateLargeToolOutputs(msgs, 1e9, cfg, nil); r.TruncatedCount != 0 {
		t.Errorf("threshold 0 must disable truncation")
	}
}
