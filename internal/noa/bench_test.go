package noa

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// benchSession builds a tool-heavy history of about n messages, all but the
// task and the newest raw messages compressed in tier-1 blocks of about 40 messages by one
// Compress call. Each range is widened the way ApplyCompression widens it (so
// a tool exchange or a reasoning turn is never cut) before the next one
// starts, so no two ranges of the call overlap.
func benchSession(b *testing.B, n, raw int) ([]CoreMessage, CompressionState, Config) {
	b.Helper()
	c := newConvo(7)
	for len(c.msgs) < n {
		c.randomTurn("")
	}
	cfg := DefaultConfig(200000)
	st := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: CreateInitialState("bench", "/a"), Config: cfg, TokenCount: 1}).State
	view := ProjectView(c.msgs, st, cfg)
	var ranges []CompressRange
	// The task (the first user message) is never compressed: the blocks
	// start after it.
	_, first := firstUserSpan(view)
	for next := max(first, 0); next+40 < len(view)-raw; {
		s, e := ApplyPairBoundaryAdjustments(next, next+39, view)
		if s < next {
			next++
			continue
		}
		startRef, _ := RefForRaw(st.MessageRefs, view[s].ID)
		endRef, _ := RefForRaw(st.MessageRefs, view[e].ID)
		ranges = append(ranges, CompressRange{StartRef: startRef, EndRef: endRef,
			Summary: fmt.Sprintf("summary of %s..%s: tool work, facts kept, see archive", startRef, endRef)})
		next = e + 1
	}
	if len(ranges) == 0 {
		return c.msgs, st, cfg
	}
	ar := ApplyCompression(ApplyInput{Ranges: ranges, Messages: view, State: st, Config: cfg, CallID: "setup", Archiver: newMemArchiver()})
	if len(ar.BlocksCreated) != len(ranges) {
		b.Fatalf("setup created %d of %d blocks: %v", len(ar.BlocksCreated), len(ranges), ar.Errors[:min(3, len(ar.Errors))])
	}
	return c.msgs, ar.State, cfg
}

// benchmarkProcessTurn: the full computation over a session whose oldest
// 90% is compressed.
func benchmarkProcessTurn(b *testing.B, n int) {
	msgs, st, cfg := benchSession(b, n, n/10)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ProcessTurn(ProcessTurnInput{Messages: msgs, State: st, Config: cfg})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(msgs)), "ns/msg")
}

func BenchmarkProcessTurn1k(b *testing.B)  { benchmarkProcessTurn(b, 1000) }
func BenchmarkProcessTurn10k(b *testing.B) { benchmarkProcessTurn(b, 10000) }
func BenchmarkProcessTurn50k(b *testing.B) { benchmarkProcessTurn(b, 50000) }

func BenchmarkApplyCompression(b *testing.B) {
	msgs, st, cfg := benchSession(b, 10000, 1000)
	view := ProjectView(msgs, st, cfg)
	arch := newMemArchiver()
	start := len(msgs) * 9 / 10
	in := ApplyInput{
		Ranges:   []CompressRange{{StartRef: IndexToRef(start), EndRef: IndexToRef(start + 60), Summary: "summary of sixty messages of tool work, facts kept, see archive for details"}},
		Messages: view, State: st, Config: cfg, CallID: "bench", Archiver: arch,
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ar := ApplyCompression(in)
		if len(ar.BlocksCreated) != 1 {
			b.Fatalf("got %d blocks, errors %v", len(ar.BlocksCreated), ar.Errors)
		}
	}
}

// callSession is the session the call benchmarks run on: what a compressing
// host keeps, all but the newest 200 messages compressed, the context at 60%
// of the window (the host's figure, returned) and the last nudge given there,
// so every turn weighs a nudge and finds it is waiting for growth.
func callSession(b *testing.B, n int) ([]CoreMessage, CompressionState, Config, int) {
	msgs, st, cfg := benchSession(b, n, 200)
	tokens := cfg.ModelContextLimit * 6 / 10
	st.Nudge.LastPerMessageNudgeTokens = tokens
	return msgs, st, cfg, tokens
}

// runCalls times host calls: each appends a tool call and its result (as
// call receives them) and runs a turn, which must carry no nudge. It
// returns how many calls it made.
func runCalls(b *testing.B, call func(pair []CoreMessage) *NudgeDecision) int {
	text := newConvo(11).text(120)
	b.ReportAllocs()
	// The setup's garbage is collected now, or the first collections in the
	// loop charge marking it (in proportion to n) to the calls.
	runtime.GC()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		id := "bench-" + strconv.Itoa(i)
		pair := []CoreMessage{
			{ID: id + "-call", Role: RoleAssistant, ContentType: CTToolCall, ToolName: "fetch", ToolCallID: id, Text: `{"q":"` + id + `"}`},
			{ID: id + "-result", Role: RoleTool, ContentType: CTToolResult, ToolName: "fetch", ToolCallID: id, Text: text},
		}
		if d := call(pair); d != nil {
			b.Fatalf("call %d carried a nudge (%s); the benchmark measures quiet turns", i, d.Reason)
		}
	}
	b.StopTimer()
	return i
}

// benchmarkIncrementalTurn: one host call on a session of about n messages
// kept by an Engine: a tool call and its result are appended and a turn is
// run. Its cost must not depend on n.
func benchmarkIncrementalTurn(b *testing.B, n int) {
	msgs, st, cfg, tokens := callSession(b, n)
	e := NewEngine(EngineInput{Messages: msgs, State: st, Config: cfg})
	e.Turn(tokens) // the first turn syncs and projects the history, and may nudge
	warm := e.work
	calls := runCalls(b, func(pair []CoreMessage) *NudgeDecision {
		e.Append(pair...)
		return e.Turn(tokens).Nudge
	})
	// The range pass resumes near the end: it steps over the recent zone
	// and the margin before it, not over the view.
	if w := e.work; e.reference || w.rebuilds > warm.rebuilds || w.scanned-warm.scanned > calls*500 {
		b.Fatalf("the engine took a slow path over %d calls: reference %v, %+v after warming up with %+v", calls, e.reference, w, warm)
	}
}

func BenchmarkIncrementalTurn100(b *testing.B) { benchmarkIncrementalTurn(b, 100) }
func BenchmarkIncrementalTurn1k(b *testing.B)  { benchmarkIncrementalTurn(b, 1000) }
func BenchmarkIncrementalTurn10k(b *testing.B) { benchmarkIncrementalTurn(b, 10000) }
func BenchmarkIncrementalTurn50k(b *testing.B) { benchmarkIncrementalTurn(b, 50000) }

// benchmarkProcessTurnCall is benchmarkIncrementalTurn's call through
// ProcessTurn over the whole history, as a host did before the Engine: the
// baseline the Engine is measured against.
func benchmarkProcessTurnCall(b *testing.B, n int) {
	msgs, st, cfg, tokens := callSession(b, n)
	st = ProcessTurn(ProcessTurnInput{Messages: msgs, State: st, Config: cfg, TokenCount: tokens}).State
	runCalls(b, func(pair []CoreMessage) *NudgeDecision {
		msgs = append(msgs, pair...)
		r := ProcessTurn(ProcessTurnInput{Messages: msgs, State: st, Config: cfg, TokenCount: tokens})
		st = r.State
		return r.Nudge
	})
}

func BenchmarkProcessTurnCall100(b *testing.B) { benchmarkProcessTurnCall(b, 100) }
func BenchmarkProcessTurnCall1k(b *testing.B)  { benchmarkProcessTurnCall(b, 1000) }
func BenchmarkProcessTurnCall10k(b *testing.B) { benchmarkProcessTurnCall(b, 10000) }
func BenchmarkProcessTurnCall50k(b *testing.B) { benchmarkProcessTurnCall(b, 50000) }
