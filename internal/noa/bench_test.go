package noa

import (
	"fmt"
	"testing"
)

// benchSession builds a tool-heavy history of about n messages, the oldest
// 90% of it compressed in tier-1 blocks of about 40 messages by one Compress
// call. Each range is widened the way ApplyCompression widens it (so a tool
// exchange or a reasoning turn is never cut) before the next one starts, so
// no two ranges of the call overlap.
func benchSession(b *testing.B, n int) ([]CoreMessage, CompressionState, Config) {
	b.Helper()
	c := newConvo(7)
	for len(c.msgs) < n {
		c.randomTurn("")
	}
	cfg := DefaultConfig(200000)
	st := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: CreateInitialState("bench", "/a"), Config: cfg, TokenCount: 1}).State
	view := ProjectView(c.msgs, st, cfg)
	var ranges []CompressRange
	for next := 0; next+40 < len(view)*9/10; {
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
	ar := ApplyCompression(ApplyInput{Ranges: ranges, Messages: view, State: st, Config: cfg, CallID: "setup", Archiver: newMemArchiver()})
	if len(ar.BlocksCreated) != len(ranges) || len(ranges) == 0 {
		b.Fatalf("setup created %d of %d blocks: %v", len(ar.BlocksCreated), len(ranges), ar.Errors[:min(3, len(ar.Errors))])
	}
	return c.msgs, ar.State, cfg
}

func benchmarkProcessTurn(b *testing.B, n int) {
	msgs, st, cfg := benchSession(b, n)
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
	msgs, st, cfg := benchSession(b, 10000)
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
