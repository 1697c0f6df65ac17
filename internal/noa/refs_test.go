package noa

import (
	"testing"
)

func TestIndexToRef(t *testing.T) {
	for _, tc := range []struct {
		in   int
		want string
	}{{1, "m00001"}, {42, "m00042"}, {99999, "m99999"}, {0, ""}, {-3, ""}, {100000, ""}} {
		if got := IndexToRef(tc.in); got != tc.want {
			t.Errorf("IndexToRef(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRefToIndex(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"m00001", 1, true},
		{"m5", 5, true},
		{"M00005", 5, true},
		{"  m00120 ", 120, true},
		{"m 7", 7, true},
		{"m99999", 99999, true},
		{"m100000", 0, false},
		{"m0", 0, false},
		{"m", 0, false},
		{"", 0, false},
		{"b5", 0, false},
		{"5", 0, false},
		{"m-5", 0, false},
		{"m5x", 0, false},
		{"m+5", 0, false},
	} {
		got, ok := RefToIndex(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RefToIndex(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAssignRefs(t *testing.T) {
	cfg := testConfig()
	msgs := []CoreMessage{
		txt("u1", RoleUser, "hello"),
		call("c1", "k1", CompressToolName),
		result("r1", "k1", CompressToolName, "panel"),
		call("c2", "k2", "search"),
		result("r2", "k2", "search", "hits"),
		RenderSummaryMessage(CompressionBlock{BlockID: "b1", Tier: 1, Summary: "s"}),
	}
	hard := hardProtectedIDs(msgs, cfg)
	first := AssignRefs(msgs, AssignRefsOptions{
		IsProtected: func(m CoreMessage) bool { return hard[m.ID] },
		ShouldSkip:  isSynthetic,
	})
	wantRaw := map[string]string{"u1": "m00001", "c1": BlockedRef, "r1": BlockedRef, "c2": "m00002", "r2": "m00003"}
	if diff := cmpDiff(wantRaw, first.Map.ByRaw); diff != "" {
		t.Fatalf("ByRaw mismatch (-want +got):\n%s", diff)
	}
	if got, want := first.NextIndex, 4; got != want {
		t.Errorf("NextIndex = %d, want %d (BLOCKED consumes no number)", got, want)
	}
	if got, want := first.NewlyAssigned, 3; got != want {
		t.Errorf("NewlyAssigned = %d, want %d", got, want)
	}
	if got, want := HighestUsedIndex(first.Map), 3; got != want {
		t.Errorf("HighestUsedIndex = %d, want %d", got, want)
	}

	// A second pass over a reordered, extended view never renumbers.
	existing := cloneRefMap(first.Map)
	more := append([]CoreMessage{txt("u9", RoleUser, "new first")}, msgs...)
	second := AssignRefs(more, AssignRefsOptions{Existing: first.Map, NextIndex: first.NextIndex})
	if diff := cmpDiff(existing, first.Map); diff != "" {
		t.Fatalf("AssignRefs mutated Existing:\n%s", diff)
	}
	for raw, ref := range first.Map.ByRaw {
		if got := second.Map.ByRaw[raw]; got != ref {
			t.Errorf("ref of %s changed from %s to %s", raw, ref, got)
		}
	}
	if got := second.Map.ByRaw["u9"]; got != "m00004" {
		t.Errorf("new message got %q, want m00004", got)
	}

	// A stale NextIndex must not hand out a number twice.
	stale := AssignRefs([]CoreMessage{txt("x", RoleUser, "x")}, AssignRefsOptions{Existing: first.Map, NextIndex: 1})
	if got := stale.Map.ByRaw["x"]; got != "m00004" {
		t.Errorf("with stale NextIndex got %q, want m00004", got)
	}
	if got := stale.Map.ByRef["m00001"]; got != "u1" {
		t.Errorf("m00001 now points at %q, want u1", got)
	}

	// ShouldSkip leaves messages out entirely; NextIndex below 1 is clamped.
	skipped := AssignRefs([]CoreMessage{txt("a", RoleUser, "a"), txt("b", RoleUser, "b")},
		AssignRefsOptions{NextIndex: -5, ShouldSkip: func(m CoreMessage) bool { return m.ID == "a" }})
	if _, ok := skipped.Map.ByRaw["a"]; ok {
		t.Errorf("skipped message was recorded")
	}
	if got := skipped.Map.ByRaw["b"]; got != "m00001" {
		t.Errorf("got %q, want m00001", got)
	}

	// The ref space is finite; exhausting it leaves later messages unaddressed.
	full := MessageRefMap{ByRaw: map[string]string{}, ByRef: map[string]string{}}
	r := AssignRefs([]CoreMessage{txt("late", RoleUser, "x")}, AssignRefsOptions{Existing: full, NextIndex: MaxRefIndex + 1})
	if _, ok := r.Map.ByRaw["late"]; ok {
		t.Errorf("message beyond MaxRefIndex got a ref")
	}
}

func TestRefLookups(t *testing.T) {
	m := MessageRefMap{
		ByRaw: map[string]string{"u1": "m00001", "p": BlockedRef},
		ByRef: map[string]string{"m00001": "u1"},
	}
	if raw, ok := RawForRef(m, " M1 "); !ok || raw != "u1" {
		t.Errorf("RawForRef(M1) = %q, %v; want u1, true", raw, ok)
	}
	if _, ok := RawForRef(m, "m2"); ok {
		t.Errorf("RawForRef(m2) found something")
	}
	if _, ok := RawForRef(m, "junk"); ok {
		t.Errorf("RawForRef(junk) found something")
	}
	if ref, ok := RefForRaw(m, "u1"); !ok || ref != "m00001" {
		t.Errorf("RefForRaw(u1) = %q, %v", ref, ok)
	}
	if _, ok := RefForRaw(m, "p"); ok {
		t.Errorf("RefForRaw of a BLOCKED message must report false")
	}
	if got := HighestUsedIndex(MessageRefMap{}); got != 0 {
		t.Errorf("HighestUsedIndex(empty) = %d, want 0", got)
	}
}

func TestParseBlockID(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"b5", "b5", true}, {"b005", "b5", true}, {"5", "b5", true}, {"B12", "b12", true},
		{"b5(T2)", "b5", true}, {" b7 (t3) ", "b7", true}, {"b0", "", false}, {"b", "", false},
		{"bx", "", false}, {"m5", "", false}, {"b5(T)", "", false}, {"b5(X2)", "", false}, {"", "", false},
	} {
		got, ok := ParseBlockID(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseBlockID(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseBoundary(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want boundaryRef
		ok   bool
	}{
		{"m00012", boundaryRef{Kind: BoundaryMessage, Ref: "m00012"}, true},
		{"M12", boundaryRef{Kind: BoundaryMessage, Ref: "m00012"}, true},
		{"b3", boundaryRef{Kind: BoundaryBlock, BlockID: "b3"}, true},
		{"b3(T1)", boundaryRef{Kind: BoundaryBlock, BlockID: "b3"}, true},
		{"175", boundaryRef{}, false},
		{"x1", boundaryRef{}, false},
		{"", boundaryRef{}, false},
	} {
		got, ok := ParseBoundary(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseBoundary(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSummaryIDs(t *testing.T) {
	if got := SummaryMessageID("b4"); got != "noa_summary_b4" {
		t.Errorf("SummaryMessageID = %q", got)
	}
	if id, ok := BlockIDFromSummaryID("noa_summary_b4"); !ok || id != "b4" {
		t.Errorf("BlockIDFromSummaryID = %q, %v", id, ok)
	}
	for _, bad := range []string{"b4", "noa_summary_", "noa_summary_x", "xnoa_summary_b4"} {
		if _, ok := BlockIDFromSummaryID(bad); ok {
			t.Errorf("BlockIDFromSummaryID(%q) accepted", bad)
		}
	}
	if got := FormatRefTag("m00012", 1234); got != "[m00012 · 1.2K tok]" {
		t.Errorf("FormatRefTag = %q", got)
	}
}

func TestAllocateBlockID(t *testing.T) {
	s := CreateInitialState("s", "/a")
	if a, b := AllocateBlockID(&s), AllocateBlockID(&s); a != "b1" || b != "b2" || s.NextBlockID != 3 {
		t.Errorf("got %s, %s, next %d; want b1, b2, next 3", a, b, s.NextBlockID)
	}
	z := CompressionState{}
	if got := AllocateBlockID(&z); got != "b1" {
		t.Errorf("zero state allocated %q, want b1", got)
	}
}

func TestTokenSnapshotFreezesAtFirstRender(t *testing.T) {
	cfg := testConfig()
	msgs := []CoreMessage{txt("u1", RoleUser, long("word", 40))}
	r1 := ProcessTurn(ProcessTurnInput{Messages: msgs, State: CreateInitialState("s", "/a"), Config: cfg, TokenCount: 1})
	first := r1.State.TokenSnapshot["m00001"]
	if first == 0 {
		t.Fatalf("no snapshot recorded for m00001")
	}
	// The host later hands a different body under the same id (e.g. a ref
	// tag edit); the frozen number must not move.
	changed := []CoreMessage{txt("u1", RoleUser, long("word", 400)), txt("u2", RoleUser, "next")}
	r2 := ProcessTurn(ProcessTurnInput{Messages: changed, State: r1.State, Config: cfg, TokenCount: 1})
	if got := r2.State.TokenSnapshot["m00001"]; got != first {
		t.Errorf("snapshot of m00001 drifted from %d to %d", first, got)
	}
	if r2.State.TokenSnapshot["m00002"] == 0 {
		t.Errorf("new message got no snapshot")
	}
}
