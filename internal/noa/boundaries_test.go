package noa

import (
	"strings"
	"testing"
)

// turnView is a conversation with a reasoning run over one call, a
// reasoning run over two parallel calls, and user turns between.
func turnView() []CoreMessage {
	return []CoreMessage{
		txt("u1", RoleUser, "start"),         // 0 m00001
		txt("a1", RoleAssistant, "ok"),       // 1 m00002
		think("r1", "plan"),                  // 2 m00003
		call("c1", "k1", "search"),           // 3 m00004
		result("t1", "k1", "search", "hits"), // 4 m00005
		txt("u2", RoleUser, "more"),          // 5 m00006
		think("r2", "plan 2"),                // 6 m00007
		call("c2", "k2", "open"),             // 7 m00008
		call("c3", "k3", "open"),             // 8 m00009
		result("t2", "k2", "open", "file a"), // 9 m00010
		result("t3", "k3", "open", "file b"), // 10 m00011
		txt("a2", RoleAssistant, "done"),     // 11 m00012
		txt("u3", RoleUser, "thanks"),        // 12 m00013
	}
}

func TestResolveBoundariesMessages(t *testing.T) {
	msgs := turnView()
	st := stateFor(msgs, testConfig())
	for _, tc := range []struct {
		start, end string
		lo, hi     int
	}{
		{"m00001", "m00002", 0, 1},
		{"m00002", "m00001", 0, 1}, // reversed endpoints are swapped
		{"m4", "m4", 2, 4},         // call pulls in its result and reasoning
		{"m00005", "m00005", 2, 4}, // result pulls in its call and reasoning
		{"m00008", "m00008", 6, 10},
		{"m00010", "m00010", 6, 10}, // parallel burst, fixed point
		{"m00003", "m00003", 2, 4},  // reasoning pulls in its act
		{" M6 ", "m00013", 5, 12},
	} {
		rr, err := ResolveBoundaries(tc.start, tc.end, msgs, st)
		if err != nil {
			t.Fatalf("%s..%s: unexpected error %v", tc.start, tc.end, err)
		}
		if rr.StartIndex != tc.lo || rr.EndIndex != tc.hi {
			t.Errorf("%s..%s: got [%d,%d], want [%d,%d]", tc.start, tc.end, rr.StartIndex, rr.EndIndex, tc.lo, tc.hi)
		}
		if rr.Kind != BoundaryMessage {
			t.Errorf("%s..%s: kind %s, want message", tc.start, tc.end, rr.Kind)
		}
		if got, want := len(rr.MessageIDs), tc.hi-tc.lo+1; got != want {
			t.Errorf("%s..%s: %d message ids, want %d", tc.start, tc.end, got, want)
		}
	}
}

func TestResolveBoundariesErrors(t *testing.T) {
	msgs := turnView()
	st := stateFor(msgs, testConfig())
	for _, tc := range []struct {
		start, end string
		kind       BoundaryNotFoundKind
		text       string
	}{
		{"m00099", "m00001", NotFoundUnknown, "does not name any message"},
		{"m00001", "zz", NotFoundInvalid, "neither a message ref nor a block id"},
		{"175", "m00001", NotFoundInvalid, "mNNNNN"},
		{"b9", "m00001", NotFoundUnknown, "does not name"},
		{"", "m00001", NotFoundInvalid, "neither"},
	} {
		_, err := ResolveBoundaries(tc.start, tc.end, msgs, st)
		if err == nil {
			t.Fatalf("%s..%s: no error", tc.start, tc.end)
		}
		if err.Kind != tc.kind || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s..%s: got %s %q, want %s containing %q", tc.start, tc.end, err.Kind, err.Msg, tc.kind, tc.text)
		}
	}
}

// blockedState returns the view and a state where b1 covers u1..a1 and b2
// (inactive, absorbed by b3) covered t-less text.
func blockState(t *testing.T) ([]CoreMessage, CompressionState) {
	t.Helper()
	msgs := turnView()
	st := stateFor(msgs, testConfig())
	st.Blocks = []CompressionBlock{
		{BlockID: "b1", Tier: 1, Summary: "first", DirectMessageIDs: []string{"u1", "a1"}, EffectiveMessageIDs: []string{"u1", "a1"}, StartRef: "m00001", EndRef: "m00002", Active: true},
		{BlockID: "b2", Tier: 1, Summary: "old", DirectMessageIDs: []string{"u2"}, EffectiveMessageIDs: []string{"u2"}, StartRef: "m00006", EndRef: "m00006", Active: false},
		{BlockID: "b3", Tier: 2, Summary: "higher", DirectBlockIDs: []string{"b2"}, EffectiveMessageIDs: []string{"u2"}, StartRef: "m00006", EndRef: "m00006", Active: true},
	}
	st.NextBlockID = 4
	return prune(msgs, st), st
}

func TestResolveBoundariesBlocks(t *testing.T) {
	view, st := blockState(t)
	// view: [S(b1), r1, c1, t1, S(b3), r2, c2, c3, t2, t3, a2, u3]
	if got := view[0].ID; got != SummaryMessageID("b1") {
		t.Fatalf("view[0] = %s, want the b1 summary", got)
	}
	rr, err := ResolveBoundaries("m00001", "m00005", view, st)
	if err != nil {
		t.Fatal(err)
	}
	if rr.StartIndex != 0 || rr.EndIndex != 3 || len(rr.Warnings) != 1 || !strings.Contains(rr.Warnings[0], "inside block b1") {
		t.Errorf("snap: got [%d,%d] warnings %q", rr.StartIndex, rr.EndIndex, rr.Warnings)
	}
	if diff := cmpDiff([]string{"b1"}, rr.NestedBlockIDs); diff != "" {
		t.Errorf("nested blocks (-want +got):\n%s", diff)
	}
	if diff := cmpDiff([]string{"r1", "c1", "t1"}, rr.MessageIDs); diff != "" {
		t.Errorf("message ids exclude summaries (-want +got):\n%s", diff)
	}

	rr, err = ResolveBoundaries("b3", "b1", view, st)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Kind != BoundaryBlock || rr.StartIndex != 0 || rr.EndIndex != 4 {
		t.Errorf("block range: got kind %s [%d,%d]", rr.Kind, rr.StartIndex, rr.EndIndex)
	}
	if diff := cmpDiff([]string{"b1", "b3"}, rr.NestedBlockIDs); diff != "" {
		t.Errorf("nested (-want +got):\n%s", diff)
	}

	_, nf := ResolveBoundaries("m00001", "m00002", view, st)
	if nf == nil || nf.Kind != NotFoundConsumed || !strings.Contains(nf.Msg, "b1") {
		t.Errorf("both endpoints inside b1: got %+v, want consumed naming b1", nf)
	}
	_, nf = ResolveBoundaries("b2", "b3", view, st)
	if nf == nil || nf.Kind != NotFoundConsumed || !strings.Contains(nf.Msg, "b3") {
		t.Errorf("absorbed block: got %+v, want consumed naming its absorber b3", nf)
	}
	// A ref known to the session but no longer in the view (and not covered).
	trimmed := append([]CoreMessage(nil), view[:len(view)-1]...)
	_, nf = ResolveBoundaries("m00013", "m00013", trimmed, st)
	if nf == nil || nf.Kind != NotFoundConsumed {
		t.Errorf("known but invisible ref: got %+v, want consumed", nf)
	}
	// An unpruned view still resolves block endpoints through coverage.
	rr, err = ResolveBoundaries("b1", "m00003", turnView(), st)
	if err != nil || rr.StartIndex != 0 || rr.EndIndex != 4 {
		t.Errorf("unpruned view: got [%d,%d] %v", rr.StartIndex, rr.EndIndex, err)
	}
}

func TestAdjustBoundariesForToolPairs(t *testing.T) {
	msgs := turnView()
	for _, tc := range []struct {
		name             string
		start, end, scan int
		lo, hi           int
	}{
		{"call pulls result", 3, 3, 20, 3, 4},
		{"result pulls call", 4, 4, 20, 3, 4},
		{"first of parallel calls", 7, 7, 20, 7, 10},
		{"last result", 10, 10, 20, 7, 10},
		{"scan bound stops the walk", 7, 7, 1, 7, 8},
		{"nothing to do", 0, 1, 20, 0, 1},
		{"reversed input", 4, 3, 20, 3, 4},
	} {
		lo, hi := AdjustBoundariesForToolPairs(tc.start, tc.end, msgs, tc.scan)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("%s: got [%d,%d], want [%d,%d]", tc.name, lo, hi, tc.lo, tc.hi)
		}
	}
	// A gap ends the walk: a stray matching id far away is not pulled in.
	gap := []CoreMessage{call("c", "k", "x"), txt("u", RoleUser, "between"), result("r", "k", "x", "late")}
	if lo, hi := AdjustBoundariesForToolPairs(0, 0, gap, 20); lo != 0 || hi != 0 {
		t.Errorf("gap: got [%d,%d], want [0,0]", lo, hi)
	}
	// Compress exchanges are never widened into.
	cmp := []CoreMessage{call("c", "k", CompressToolName), result("r", "k", CompressToolName, "panel")}
	if lo, hi := AdjustBoundariesForToolPairs(0, 0, cmp, 20); lo != 0 || hi != 0 {
		t.Errorf("compress: got [%d,%d], want [0,0]", lo, hi)
	}
	if lo, hi := AdjustBoundariesForToolPairs(1, 2, nil, 20); lo != 1 || hi != 2 {
		t.Errorf("empty view changed the range")
	}
}

func TestAdjustBoundariesForReasoningPairs(t *testing.T) {
	msgs := turnView()
	for _, tc := range []struct {
		start, end, lo, hi int
	}{
		{3, 3, 2, 3},   // act pulls in its reasoning
		{2, 2, 2, 3},   // reasoning pulls in its act
		{8, 8, 6, 8},   // second call of the group
		{6, 7, 6, 8},   // reasoning + first act pulls the second act
		{9, 10, 9, 10}, // results alone are not reasoning's business
		{0, 1, 0, 1},
	} {
		lo, hi := AdjustBoundariesForReasoningPairs(tc.start, tc.end, msgs)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("[%d,%d]: got [%d,%d], want [%d,%d]", tc.start, tc.end, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := ApplyPairBoundaryAdjustments(8, 8, msgs); lo != 6 || hi != 10 {
		t.Errorf("ApplyPairBoundaryAdjustments: got [%d,%d], want [6,10]", lo, hi)
	}
}

func TestComputeTurnGroups(t *testing.T) {
	got := ComputeTurnGroups(turnView())
	want := []TurnGroup{
		{ActIdx: []int{1}},
		{ReasoningIdx: []int{2}, ActIdx: []int{3}, ResultIdx: []int{4}},
		{ReasoningIdx: []int{6}, ActIdx: []int{7, 8}, ResultIdx: []int{9, 10}},
		{ActIdx: []int{11}},
	}
	if diff := cmpDiff(want, got); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// Reasoning after an act starts a new group.
	msgs := []CoreMessage{think("r1", "a"), txt("a1", RoleAssistant, "x"), think("r2", "b"), call("c", "k", "t")}
	if n := len(ComputeTurnGroups(msgs)); n != 2 {
		t.Errorf("got %d groups, want 2", n)
	}
	if len(ComputeTurnGroups(nil)) != 0 {
		t.Errorf("groups of nothing")
	}
}

func TestWithdrawSplitTurns(t *testing.T) {
	msgs := turnView()
	folded := map[string]bool{"r2": true, "c2": true, "t2": true, "u2": true}
	got, withdrawn := WithdrawSplitTurns(msgs, folded)
	if diff := cmpDiff(map[string]bool{"u2": true}, got); diff != "" {
		t.Errorf("surviving (-want +got):\n%s", diff)
	}
	if diff := cmpDiff([]string{"r2", "c2", "t2"}, withdrawn); diff != "" {
		t.Errorf("withdrawn (-want +got):\n%s", diff)
	}
	if len(folded) != 4 {
		t.Errorf("input set was mutated")
	}
	whole := map[string]bool{"r2": true, "c2": true, "c3": true, "t2": true, "t3": true}
	if got, w := WithdrawSplitTurns(msgs, whole); len(w) != 0 || len(got) != 5 {
		t.Errorf("a whole group was withdrawn: %v", w)
	}
	// Acts folded with reasoning visible is not a split this repairs.
	if _, w := WithdrawSplitTurns(msgs, map[string]bool{"c1": true, "t1": true}); len(w) != 0 {
		t.Errorf("withdrew %v", w)
	}
}
