package noa

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// diffIfUnequal is cmpDiff, computed only when reflect.DeepEqual already
// says the values differ (go-cmp is slow over whole states every step).
func diffIfUnequal(a, b any) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	if d := cmpDiff(a, b); d != "" {
		return d
	}
	return fmt.Sprintf("reflect.DeepEqual sees a difference go-cmp does not:\n%#v\n%#v", a, b)
}

// wordCount is the twin's token counter. It differs from DefaultCountTokens
// on purpose: a figure the engine took from the wrong counter shows up.
func wordCount(text string) int {
	words, in := 0, false
	for i := 0; i < len(text); i++ {
		space := text[i] == ' ' || text[i] == '\n' || text[i] == '\t'
		if !space && !in {
			words++
		}
		in = !space
	}
	return words + len(text)/16
}

// twin drives one session through ProcessTurn/ProjectView/ApplyCompression
// (the reference) and through an Engine side by side, and fails the test at
// the first step where they differ.
type twin struct {
	t    *testing.T
	name string
	cfg  Config
	c    *convo
	rnd  *rand.Rand

	st      CompressionState // the reference's state
	archRef *memArchiver

	e       *Engine
	archEng *memArchiver
	// nextTokens, when positive, is the next turn's TokenCount.
	nextTokens int
	fed        int // c.msgs[:fed] have been appended to e

	mcp  bool // no user messages after the first
	calm bool // Compress rarely, and only when nudged
	// tightCheckpoints: the engine's checkpoints sit 0-2 entries before the
	// recent zone instead of checkpointMargin.
	tightCheckpoints bool
	later            []delayed // messages held back to a later stretch
	// gateway: tool results carry no tool name (a provider's tool_result
	// names only the call), Compress's answers included.
	gateway bool
	stats   twinStats
}

// delayed is a message that joins the history after stretches more.
type delayed struct {
	m         CoreMessage
	stretches int
}

type twinStats struct {
	turns, nudges, truncated, blocks, failed, rebuilt, tier2, tier3 int
	work                                                            engineWork
}

func newTwin(t *testing.T, seed int64, cfg Config) *twin {
	c := newConvo(seed)
	tw := &twin{t: t, cfg: cfg, c: c, rnd: c.rng, st: CreateInitialState("sim", "/archive"),
		archRef: newMemArchiver(), archEng: newMemArchiver(), tightCheckpoints: seed%2 == 1}
	tw.e = tw.newEngine(nil, tw.st)
	return tw
}

// newEngine starts the twin's engine; on odd seeds its checkpoints sit
// right at the recent zone, so they are voided and resumed far more often.
func (tw *twin) newEngine(msgs []CoreMessage, st CompressionState) *Engine {
	e := NewEngine(EngineInput{Messages: msgs, State: st, Config: tw.cfg, CountTokens: wordCount})
	if tw.tightCheckpoints {
		e.margin = tw.rnd.Intn(3)
	}
	return e
}

// feed appends to the engine what the history gained, in one or more
// Append calls (they form one batch either way).
func (tw *twin) feed() {
	for tw.fed < len(tw.c.msgs) {
		n := 1 + tw.rnd.Intn(len(tw.c.msgs)-tw.fed)
		tw.e.Append(tw.c.msgs[tw.fed : tw.fed+n]...)
		tw.fed += n
	}
}

// grow appends one random stretch of conversation, with the odd shapes a
// host can produce: calls answered a turn later, results before their
// calls, system text, code, stale synthetic messages, big results.
func (tw *twin) grow() {
	c, r := tw.c, tw.rnd
	before := len(c.msgs)
	var keep []delayed
	for _, d := range tw.later {
		if d.stretches--; d.stretches <= 0 {
			c.msgs = append(c.msgs, d.m)
		} else {
			keep = append(keep, d)
		}
	}
	tw.later = keep
	switch k := r.Intn(44); {
	case k < 28:
		for n := 1 + r.Intn(2); n > 0; n-- {
			c.randomTurn("memory:store")
		}
	case k < 30: // a call answered one to four stretches later
		id := c.id("call")
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "slow", ToolCallID: id, Text: `{"wait":1}`})
		tw.later = append(tw.later, delayed{CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "slow", ToolCallID: id, Text: c.text(40 + r.Intn(200))}, 1 + r.Intn(4)})
	case k < 31: // a result recorded before its call, in one batch
		id := c.id("call")
		res := CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "fetch", ToolCallID: id, Text: c.text(60)}
		call := CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "fetch", ToolCallID: id, Text: `{}`}
		c.msgs = append(c.msgs, res, call)
	case k < 32: // a result whose call comes with the next stretch
		id := c.id("call")
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "fetch", ToolCallID: id, Text: c.text(60)})
		tw.later = append(tw.later, delayed{CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "fetch", ToolCallID: id, Text: `{}`}, 1})
	case k < 35: // a burst of tool work answering a call from before it
		id := c.id("call")
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "slow", ToolCallID: id, Text: `{"wait":2}`})
		for n := 3 + r.Intn(8); n > 0; n-- {
			c.tool("fetch", 10+r.Intn(60))
		}
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "slow", ToolCallID: id, Text: c.text(50)})
	case k < 37: // protected tools of two names side by side
		c.tool("memory:fetch", 10+r.Intn(30))
		c.tool("memory:store", 10+r.Intn(30))
	case k < 33:
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("s"), Role: RoleSystem, ContentType: CTText, Text: "system: " + c.text(20)})
	case k < 34:
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("a"), Role: RoleAssistant, ContentType: CTText, Text: "```go\n" + c.text(30) + "\n```"})
	case k < 35: // noa's own messages left in a host's history are dropped
		c.msgs = append(c.msgs, CoreMessage{ID: NudgeMessageID, Role: RoleUser, ContentType: CTText, Text: "[noa] an old nudge"})
	case k < 36: // a call and result without ids
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "Bash", Text: `{"cmd":"ls"}`},
			CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "Bash", Text: c.text(30)})
	case k < 40: // a big output, for emergency truncation
		c.tool("fetch", 1500+r.Intn(1500))
	case k < 41: // a huge answer, cut even in the recent zone (issue 27)
		c.msgs = append(c.msgs, CoreMessage{ID: c.id("a"), Role: RoleAssistant, ContentType: CTText, Text: c.text(4000 + r.Intn(8000))})
	case k < 42: // a pasted document in a user turn
		c.user(4000 + r.Intn(8000))
	default:
		c.tool("Bash", 20+r.Intn(100))
	}
	if tw.gateway {
		for i := before; i < len(c.msgs); i++ {
			if c.msgs[i].ContentType == CTToolResult {
				c.msgs[i].ToolName = ""
			}
		}
	}
	if tw.mcp {
		kept := c.msgs[:before]
		for _, m := range c.msgs[before:] {
			if m.Role != RoleUser || m.ID == NudgeMessageID {
				kept = append(kept, m)
			}
		}
		c.msgs = kept
	}
}

// turn runs both and compares everything they return.
func (tw *twin) turn() ProcessTurnResult {
	tw.t.Helper()
	tw.stats.turns++
	tokens := 0
	if tw.rnd.Intn(2) == 0 {
		tokens = tw.rnd.Intn(tw.cfg.ModelContextLimit * 11 / 10)
	}
	if tw.nextTokens > 0 {
		tokens, tw.nextTokens = tw.nextTokens, 0
	}
	msgs := deepCopyMsgs(tw.c.msgs)
	ref := ProcessTurn(ProcessTurnInput{Messages: tw.c.msgs, State: tw.st, Config: tw.cfg, TokenCount: tokens, CountTokens: wordCount})
	tw.st = ref.State
	got := tw.e.Turn(tokens)
	if diff := diffIfUnequal(ref.Messages, got.Messages()); diff != "" {
		tw.t.Fatalf("%s: views differ (-full +incremental):\n%s", tw.name, diff)
	}
	if diff := diffIfUnequal(ref.Nudge, got.Nudge); diff != "" {
		tw.t.Fatalf("%s: nudges differ (-full +incremental):\n%s", tw.name, diff)
	}
	if ref.TruncatedCount != got.TruncatedCount {
		tw.t.Fatalf("%s: truncated %d, incremental %d", tw.name, ref.TruncatedCount, got.TruncatedCount)
	}
	if diff := diffIfUnequal(tw.st, tw.e.State()); diff != "" {
		tw.t.Fatalf("%s: states differ (-full +incremental):\n%s", tw.name, diff)
	}
	projected := sizeWith(ProjectView(msgs, tw.st, tw.cfg), wordCount)
	view := ref.Messages
	if ref.Nudge != nil {
		view = view[:len(view)-1]
	}
	wantTokens := tokens
	if wantTokens <= 0 {
		wantTokens = projected
	}
	if got.ProjectedTokens != projected || got.ViewTokens != sizeWith(view, wordCount) || got.Tokens != wantTokens {
		tw.t.Fatalf("%s: tokens projected/view/judged %d/%d/%d, want %d/%d/%d", tw.name,
			got.ProjectedTokens, got.ViewTokens, got.Tokens, projected, sizeWith(view, wordCount), wantTokens)
	}
	last := msgs[len(msgs)-1]
	gref, gtok, gok := tw.e.Ref(last.ID)
	wref, wok := RefForRaw(tw.st.MessageRefs, last.ID)
	if gref != wref || gok != wok || gtok != tw.st.TokenSnapshot[wref] {
		tw.t.Fatalf("%s: Ref(%s) = %s %d %v, want %s %d %v", tw.name, last.ID, gref, gtok, gok, wref, tw.st.TokenSnapshot[wref], wok)
	}
	if ref.Nudge != nil {
		tw.stats.nudges++
	}
	tw.stats.truncated += ref.TruncatedCount
	return ref
}

// compress applies one Compress call through both and compares the
// outcome, then records the call and its answer in the history.
func (tw *twin) compress(ranges []CompressRange) {
	tw.t.Helper()
	tw.compressAnswering(ranges, answerRandomly)
}

// How the twin records a Compress call's answer.
const (
	answerRandomly = iota // at once, after a turn, or stretches later
	answerHeld            // not at all: compressAnswering returns it
)

func (tw *twin) compressAnswering(ranges []CompressRange, how int) CoreMessage {
	tw.t.Helper()
	if tw.rnd.Intn(8) == 0 {
		// The archive store fails on the next write (on both sides).
		tw.archRef.failOn[tw.archRef.writes+1+tw.rnd.Intn(2)] = true
		for k := range tw.archRef.failOn {
			tw.archEng.failOn[k] = true
		}
	}
	prefix := deepCopyMsgs(tw.c.msgs)
	view := ProjectView(prefix, tw.st, tw.cfg)
	if diff := diffIfUnequal(view, tw.e.View()); diff != "" {
		tw.t.Fatalf("%s: views before Compress differ (-full +incremental):\n%s", tw.name, diff)
	}
	callID := tw.c.id("ccall")
	in := ApplyInput{Ranges: ranges, Messages: view, State: tw.st, Config: tw.cfg, CallID: callID,
		Archiver: tw.archRef, CreatedAt: "2026-01-01T00:00:00Z", Now: 1000, CountTokens: wordCount}
	before := sizeWith(view, wordCount)
	want := ApplyCompression(in)
	tw.st = want.State
	afterView := ProjectView(prefix, tw.st, tw.cfg)
	wantPanel := FormatPanel(PanelInput{Result: want, BeforeTokens: before, AfterTokens: sizeWith(afterView, wordCount), Messages: afterView})

	engBefore := tw.e.ProjectedTokens()
	got := tw.e.Compress(CompressInput{Ranges: ranges, CallID: callID, Archiver: tw.archEng, CreatedAt: in.CreatedAt, Now: in.Now})
	if diff := diffIfUnequal(want, got); diff != "" {
		tw.t.Fatalf("%s: Compress results differ (-full +incremental):\n%s", tw.name, diff)
	}
	gotPanel := FormatPanel(PanelInput{Result: got, BeforeTokens: engBefore, AfterTokens: tw.e.ProjectedTokens(), Messages: tw.e.View()})
	if gotPanel != wantPanel {
		tw.t.Fatalf("%s: panels differ:\n%s\n---\n%s", tw.name, wantPanel, gotPanel)
	}
	if diff := diffIfUnequal(tw.archRef.snapshot(), tw.archEng.snapshot()); diff != "" {
		tw.t.Fatalf("%s: archives differ:\n%s", tw.name, diff)
	}
	tw.stats.blocks += len(got.BlocksCreated)
	for _, b := range got.BlocksCreated {
		switch b.Tier {
		case 2:
			tw.stats.tier2++
		case 3:
			tw.stats.tier3++
		}
	}
	if len(got.BlocksCreated) == 0 {
		tw.stats.failed++
	}
	call := CoreMessage{ID: tw.c.id("cc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: CompressToolName, ToolCallID: callID, Text: compressArgsJSON(ranges)}
	res := CoreMessage{ID: tw.c.id("cr"), Role: RoleTool, ContentType: CTToolResult, ToolName: CompressToolName, ToolCallID: callID, Text: wantPanel}
	if tw.gateway {
		res.ToolName = ""
	}
	tw.c.msgs = append(tw.c.msgs, call)
	if how == answerHeld {
		return res
	}
	switch tw.rnd.Intn(8) {
	case 0, 1: // the host records the call and runs a turn before the answer
		tw.feed()
		tw.turn()
	case 2: // the answer is recorded stretches later, other calls between
		tw.later = append(tw.later, delayed{res, 1 + tw.rnd.Intn(3)})
		return res
	}
	tw.c.msgs = append(tw.c.msgs, res)
	return res
}

// randomCompress picks a Compress call the way a model might: obeying the
// nudge, arbitrary refs, block ranges (tier-2/3 rewrites), junk, or a batch
// mixing good and bad ranges.
func (tw *twin) randomCompress(nudge *NudgeDecision) bool {
	r := tw.rnd
	if tw.calm && (nudge == nil || r.Intn(3) > 0) {
		return false
	}
	hi := HighestUsedIndex(tw.st.MessageRefs)
	refRange := func() CompressRange {
		a, b := 1+r.Intn(max(hi, 1)), 1+r.Intn(max(hi, 1))
		return rng(IndexToRef(a), IndexToRef(b))
	}
	switch k := r.Intn(10); {
	case nudge != nil && k < 6:
		var ranges []CompressRange
		switch nudge.Tier {
		case 2, 3:
			blocks := nudge.TierTargetBlocks
			ranges = append(ranges, CompressRange{StartRef: blocks[0].BlockID, EndRef: blocks[len(blocks)-1].BlockID,
				Summary: fmt.Sprintf("Source: %s..%s distilled to tier %d; the work is done, see archive.", blocks[0].BlockID, blocks[len(blocks)-1].BlockID, nudge.Tier)})
		default:
			for _, rg := range nudge.CompressibleRanges {
				// Some summaries pass SummaryStubChars, so the Compress
				// call that carries them is shown cut.
				summary := fmt.Sprintf("Summary of %s-%s: %d messages of tool work, facts extracted; continue.", rg.StartRef, rg.EndRef, rg.Count)
				if r.Intn(2) == 0 {
					summary += " Details: " + tw.c.text(40+r.Intn(60))
				}
				ranges = append(ranges, CompressRange{StartRef: rg.StartRef, EndRef: rg.EndRef, Topic: "tool work", Summary: summary})
			}
		}
		tw.compress(ranges)
	case k == 6 && hi > 4:
		tw.compress([]CompressRange{refRange()})
	case k == 7:
		act := ActiveBlocks(tw.st)
		if len(act) < 2 {
			return false
		}
		i := r.Intn(len(act) - 1)
		tw.compress([]CompressRange{{StartRef: act[i].BlockID, EndRef: act[i+1+r.Intn(len(act)-i-1)].BlockID, Summary: okSummary}})
	case k == 8 && hi > 4:
		tw.compress([]CompressRange{refRange(), refRange(), rng("m"+fmt.Sprint(r.Intn(900)), "zz")})
	case k == 9 && r.Intn(3) == 0:
		tw.compress(nil)
	default:
		return false
	}
	return true
}

// restart replaces the engine by one built from the history and a state:
// the live one, or one RebuildStateFromLog recovers (which the reference
// adopts too, pacing reset).
func (tw *twin) restart() {
	tw.stats.rebuilt++
	st := tw.e.State()
	if tw.rnd.Intn(2) == 0 {
		rb := RebuildStateFromLog(RebuildInput{Messages: tw.c.msgs[:tw.fed], Config: tw.cfg, Archiver: newMemArchiver(),
			SessionID: "sim", ArchiveRoot: "/archive", CountTokens: wordCount, CreatedAt: "2026-01-01T00:00:00Z", Now: 1000})
		st = rb.State
		tw.st = CloneState(st)
	}
	if tw.rnd.Intn(3) == 0 {
		// A state saved before token snapshots existed: refs without frozen
		// figures, which the recent zone then estimates.
		st.TokenSnapshot = map[string]int{}
		tw.st = CloneState(st)
	}
	if tw.rnd.Intn(3) == 0 {
		tw.e.SetState(st)
		return
	}
	tw.addWork()
	tw.e = tw.newEngine(tw.c.msgs[:tw.fed], st)
}

func (tw *twin) addWork() {
	if tw.e.reference {
		tw.t.Fatalf("%s: the engine fell back to the full computation; the generator gives unique ids", tw.name)
	}
	w, s := tw.e.work, &tw.stats.work
	s.extends += w.extends
	s.rebuilds += w.rebuilds
	s.resumed += w.resumed
	s.scannedFrom0 += w.scannedFrom0
	s.scanned += w.scanned
}

func twinConfig(seed int64) Config {
	cfg := DefaultConfig(20000 + int(seed)*1000)
	cfg.ProtectedTools = []string{"memory:*"}
	cfg.Tiers.Tier2Trigger, cfg.Tiers.Tier3Trigger = 3, 2
	cfg.Compress.MinCompressRange = 500
	switch seed % 5 {
	case 0:
		cfg.Tiers.MaxTier = 2
	case 1:
		cfg.PreserveRecentMessages, cfg.PreserveRecentTokens = 0, 0
	case 2:
		cfg.Tiers.Enabled = false
		cfg.MaxCompressAttempts = 1
	case 3:
		cfg.PreserveRecentMessages, cfg.PreserveRecentTokens = 12, 300
	}
	return cfg
}

// TestEngineEqualsProcessTurn: on random sessions with random Compress calls
// between turns, the incremental engine and the full computation give the
// same view, refs, nudges, state, blocks, archives and panels at every step,
// also after the engine is rebuilt from the history and a state.
func TestEngineEqualsProcessTurn(t *testing.T) {
	t.Parallel()
	seeds := 12
	if testing.Short() {
		seeds = 5
	}
	var total twinStats
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw := newTwin(t, seed, twinConfig(seed))
			tw.mcp = seed%4 == 3
			tw.calm = seed%3 == 1
			tw.gateway = seed%5 == 4
			tw.c.user(20)
			steps := 160
			if tw.calm {
				steps = 300
			}
			for step := 0; step < steps; step++ {
				tw.name = fmt.Sprintf("seed %d step %d", seed, step)
				tw.grow()
				tw.feed()
				r := tw.turn()
				if tw.randomCompress(r.Nudge) {
					tw.feed()
					if tw.rnd.Intn(3) == 0 {
						tw.turn()
					}
				}
				if tw.rnd.Intn(25) == 0 {
					tw.restart()
				}
			}
			tw.addWork()
			s := tw.stats
			t.Logf("turns %d nudges %d truncated %d blocks %d (tier2 %d, tier3 %d) failed calls %d restarts %d; engine %+v",
				s.turns, s.nudges, s.truncated, s.blocks, s.tier2, s.tier3, s.failed, s.rebuilt, s.work)
			total.nudges += s.nudges
			total.truncated += s.truncated
			total.blocks += s.blocks
			total.tier2 += s.tier2
			total.tier3 += s.tier3
			total.failed += s.failed
			total.rebuilt += s.rebuilt
			total.work.extends += s.work.extends
			total.work.resumed += s.work.resumed
		})
	}
	// The run must have exercised what it claims to.
	if total.nudges == 0 || total.truncated == 0 || total.blocks == 0 || total.tier2 == 0 || total.tier3 == 0 || total.failed == 0 || total.rebuilt == 0 ||
		total.work.extends == 0 || total.work.resumed == 0 {
		t.Errorf("the random sessions missed a case: %+v", total)
	}
}

// TestEngineZoneReachesBack: a late tool result pulls the recent zone back
// over entries the range pass had already checkpointed as compressible; the
// engine must notice and not resume from there.
func TestEngineZoneReachesBack(t *testing.T) {
	cfg := DefaultConfig(100000)
	cfg.PreserveRecentMessages, cfg.PreserveRecentTokens = 4, 0
	cfg.MaxCompressAttempts = 100
	tw := newTwin(t, 3, cfg)
	tw.e.margin = 0
	tw.name = "zone reaches back"
	c := tw.c
	c.user(10)
	for range 150 {
		c.tool("fetch", 100)
	}
	slow := c.id("call")
	c.msgs = append(c.msgs, CoreMessage{ID: c.id("tc"), Role: RoleAssistant, ContentType: CTToolCall, ToolName: "slow", ToolCallID: slow, Text: `{}`})
	// Two turns of tool work move the zone, and the checkpoint, past it.
	for i, tokens := range []int{46000, 59000} {
		c.tool("fetch", 100)
		c.tool("fetch", 100)
		tw.feed()
		tw.nextTokens = tokens
		if r := tw.turn(); r.Nudge == nil {
			t.Fatalf("setup: no nudge at turn %d", i+1)
		}
	}
	if len(tw.e.cps) == 0 {
		t.Fatalf("setup: the engine holds no checkpoint")
	}
	before := tw.e.work
	c.msgs = append(c.msgs, CoreMessage{ID: c.id("tr"), Role: RoleTool, ContentType: CTToolResult, ToolName: "slow", ToolCallID: slow, Text: c.text(40)})
	tw.feed()
	tw.nextTokens = 72000
	if r := tw.turn(); r.Nudge == nil {
		t.Fatalf("no nudge at the third turn, so its ranges went unchecked")
	}
	if tw.e.work.resumed != before.resumed || tw.e.work.scannedFrom0 != before.scannedFrom0+1 {
		t.Errorf("got %+v after %+v; want the pass started over, the zone having reached back past the checkpoint", tw.e.work, before)
	}
}

// TestEngineLateCompressAnswer: the answer to a Compress call arrives after
// newer failed calls hid the call; without a tool name on the answer (as a
// gateway records it) only the call id ties it to Compress.
func TestEngineLateCompressAnswer(t *testing.T) {
	cfg := twinConfig(4)
	tw := newTwin(t, 4, cfg)
	tw.gateway = true
	tw.name = "late Compress answer"
	tw.c.user(10)
	for range 30 {
		tw.c.tool("fetch", 60)
	}
	tw.feed()
	tw.turn()
	junk := []CompressRange{rng("m99", "zz")}
	held := tw.compressAnswering(junk, answerHeld)
	tw.feed()
	tw.turn()
	for range 3 {
		tw.compressAnswering(junk, answerHeld)
		tw.feed()
		tw.turn()
	}
	tw.c.msgs = append(tw.c.msgs, held)
	tw.feed()
	r := tw.turn()
	for _, m := range r.Messages {
		if m.ID == held.ID {
			t.Fatalf("the late answer %s is shown, though its call is hidden", held.ID)
		}
	}
}

// TestEngineNudgeWithoutProtectedRanges: with no recent zone, no user
// message and no protected tool, a nudge lists no protected range at all.
func TestEngineNudgeWithoutProtectedRanges(t *testing.T) {
	cfg := DefaultConfig(40000)
	cfg.PreserveRecentMessages, cfg.PreserveRecentTokens = 0, 0
	tw := newTwin(t, 5, cfg)
	tw.name = "no protected ranges"
	for range 60 {
		tw.c.tool("fetch", 80)
	}
	tw.feed()
	tw.nextTokens = 25000
	r := tw.turn()
	if r.Nudge == nil || r.Nudge.ProtectedRanges != nil {
		t.Fatalf("want a nudge without protected ranges, got %+v", r.Nudge)
	}
}
