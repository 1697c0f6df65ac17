package noa

import (
	"math"
	"testing"
)

// rangesFixture: b1 covers u1; a protected memory exchange sits between
// compressible spans; the soft zone holds the last two messages.
func rangesFixture(t *testing.T) ([]CoreMessage, CompressionState, Config) {
	t.Helper()
	msgs := applyView()
	msgs[5].ToolName, msgs[6].ToolName = "memory:store", "memory:store"
	cfg := testConfig()
	cfg.ProtectedTools = []string{"memory:*"}
	cfg.PreserveRecentMessages = 2
	st := stateFor(msgs, cfg)
	st.Blocks = []CompressionBlock{{BlockID: "b1", Tier: 1, Summary: "s", EffectiveMessageIDs: []string{"u1"}, DirectMessageIDs: []string{"u1"}, StartRef: "m00001", EndRef: "m00001", Active: true, CompressedTokens: 70}}
	return prune(msgs, st), st, cfg
}

func TestComputeProtectedRefs(t *testing.T) {
	view, st, cfg := rangesFixture(t)
	// u2 (m00006) is the first user message in view: b1 covers u1.
	if diff := cmpDiff(map[string]bool{"m00006": true, "m00009": true, "m00010": true}, ComputeProtectedRefs(view, st, cfg)); diff != "" {
		t.Errorf("zone (-want +got):\n%s", diff)
	}
	// The zone never splits an exchange: two slots ending in a result pull
	// in its call (and the call's reasoning).
	msgs := turnView()[:11] // ends with the parallel results t2, t3
	cfg2 := testConfig()
	cfg2.PreserveRecentMessages = 1
	st2 := stateFor(msgs, cfg2)
	got := ComputeProtectedRefs(msgs, st2, cfg2)
	for _, ref := range []string{"m00007", "m00008", "m00009", "m00010", "m00011", "m00006"} {
		if !got[ref] {
			t.Errorf("%s not protected; zone %v", ref, got)
		}
	}
	// Token budget extends the zone; never-preserve tools take no slot.
	cfg3 := testConfig()
	cfg3.PreserveRecentMessages = 1
	msgs3 := []CoreMessage{txt("u", RoleUser, "go"), txt("a", RoleAssistant, "x"), call("c", "k", "Read"), result("r", "k", "Read", long("y", 50))}
	st3 := stateFor(msgs3, cfg3)
	got3 := ComputeProtectedRefs(msgs3, st3, cfg3)
	if diff := cmpDiff(map[string]bool{"m00001": true, "m00002": true}, got3); diff != "" {
		t.Errorf("never-preserve zone (-want +got):\n%s", diff)
	}
	cfg3.PreserveRecentTokens = 100000
	if got := ComputeProtectedRefs(msgs3, st3, cfg3); len(got) != 2 || got["m00003"] {
		t.Errorf("token budget: %v (never-preserve tools stay compressible)", got)
	}
}

func TestBuildCompressibleRanges(t *testing.T) {
	view, st, cfg := rangesFixture(t)
	soft := ComputeProtectedRefs(view, st, cfg)
	ranges, prot := BuildCompressibleRanges(view, st, cfg, soft, nil)
	tok := func(ids ...string) (total, tool, text int) {
		for _, m := range view {
			for _, id := range ids {
				if m.ID == id {
					n := CountMessageTokens(m, nil)
					total += n
					switch m.ContentType {
					case CTToolCall, CTToolResult:
						tool += n
					case CTText:
						text += n
					}
				}
			}
		}
		return
	}
	pct := func(a, b int) int { return int(math.Round(100 * float64(a) / float64(b))) }
	t1, tool1, text1 := tok("r1", "c1", "t1", "a1")
	t2, tool2, text2 := tok("c3", "t3")
	chars := func(ids ...string) int {
		n := 0
		for _, m := range view {
			for _, id := range ids {
				if m.ID == id {
					n += len([]rune(m.Text))
				}
			}
		}
		return n
	}
	wantR := []RangeInfo{
		{StartRef: "m00002", EndRef: "m00005", Count: 4, Tokens: t1, Chars: chars("r1", "c1", "t1", "a1"), ToolPct: pct(tool1, t1), TextPct: pct(text1, t1)},
		{StartRef: "m00007", EndRef: "m00008", Count: 2, Tokens: t2, Chars: chars("c3", "t3"), ToolPct: pct(tool2, t2), TextPct: pct(text2, t2)},
	}
	if diff := cmpDiff(wantR, ranges); diff != "" {
		t.Errorf("ranges (-want +got):\n%s", diff)
	}
	pt, _, _ := tok("c2", "t2")
	rt, _, _ := tok("a2", "u3")
	ut, _, _ := tok("u2")
	wantP := []ProtectedRange{
		{Count: 2, Tokens: pt, Tools: []string{"memory:store"}, after: "m00005"},
		{StartRef: "m00006", EndRef: "m00006", Count: 1, Tokens: ut, after: "m00006"},
		{StartRef: "m00009", EndRef: "m00010", Count: 2, Tokens: rt, after: "m00009"},
	}
	if diff := cmpDiff(wantP, prot); diff != "" {
		t.Errorf("protected (-want +got):\n%s", diff)
	}
	// Both spans are under ViableRangeMinTokens here, so nothing is worth
	// recommending; the protected spans are still reported.
	rec := BuildRecommendation(view, st, cfg, nil)
	if !rec.NothingToCompress || len(rec.CompressibleRanges) != 0 || len(rec.ProtectedRanges) != 3 {
		t.Errorf("recommendation: %+v", rec)
	}
	big := deepCopyMsgs(view)
	big[3].Text = long("payload", 400) // t1
	rec = BuildRecommendation(big, st, cfg, nil)
	if rec.NothingToCompress || len(rec.CompressibleRanges) != 1 || rec.CompressibleRanges[0].StartRef != "m00002" {
		t.Errorf("recommendation with a viable span: %+v", rec)
	}
}

func TestViableAndMerge(t *testing.T) {
	in := []RangeInfo{
		{StartRef: "m00001", EndRef: "m00002", Count: 2, Tokens: 100, Chars: 400, ToolPct: 100},
		{StartRef: "m00004", EndRef: "m00005", Count: 2, Tokens: 50, Chars: 200, TextPct: 100, UserMsgs: 1},
		{StartRef: "m00007", EndRef: "m00009", Count: 3, Tokens: 300, Chars: 1200, ToolPct: 50, TextPct: 50},
		{StartRef: "m00011", EndRef: "m00011", Count: 1, Tokens: 20, Chars: 80, TextPct: 100, Dangerous: true},
	}
	if got := ViableRanges(in); len(got) != 1 || got[0].StartRef != "m00007" {
		t.Errorf("ViableRanges = %+v", got)
	}
	got := MergeRangesToThreshold(in, 500)
	want := []RangeInfo{
		{StartRef: "m00001", EndRef: "m00005", Count: 4, Tokens: 150, Chars: 600, ToolPct: 67, TextPct: 33, UserMsgs: 1},
		{StartRef: "m00007", EndRef: "m00011", Count: 4, Tokens: 320, Chars: 1280, ToolPct: 47, TextPct: 53, Dangerous: true},
	}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if got := MergeRangesToThreshold(in[:1], 10000); len(got) != 1 || got[0].Chars != 400 {
		t.Errorf("a lone short range is kept as it is: %+v", got)
	}
	if got := MergeRangesToThreshold(nil, 10); got != nil {
		t.Errorf("nothing in, %v out", got)
	}
	if got := MergeRangesToThreshold(in, 0); len(got) != 4 {
		t.Errorf("zero threshold merged: %+v", got)
	}
}

func TestActiveBlockSpansAndBreakdown(t *testing.T) {
	view, st, _ := rangesFixture(t)
	st.Blocks = append(st.Blocks, CompressionBlock{BlockID: "b0", Tier: 2, Active: false})
	spans := ActiveBlockSpans(st)
	if len(spans) != 1 || spans[0].BlockID != "b1" || spans[0].Count != 1 || spans[0].OriginalTokens != 70 || spans[0].SummaryTokens <= 0 {
		t.Errorf("spans = %+v", spans)
	}
	got := ComputeContextBreakdown(append(view, txt("s", RoleSystem, "sys"), txt("k", RoleAssistant, "```go\nx\n```")), nil)
	for _, k := range []string{"summaries", "tool", "system", "code", "text"} {
		if got[k] <= 0 {
			t.Errorf("bucket %s empty: %v", k, got)
		}
	}
	if len(ActiveBlocks(st)) != 1 || FindBlock(&st, "b1(T1)") == nil || FindBlock(&st, "b9") != nil {
		t.Errorf("ActiveBlocks / FindBlock")
	}
	if c := CoveredMessageIDs(st); len(c) != 1 || !c["u1"] {
		t.Errorf("CoveredMessageIDs = %v", c)
	}
}
