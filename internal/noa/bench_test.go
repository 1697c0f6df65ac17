package noa

import (
	"fmt"
	"testing"
)

// benchSession builds a tool-heavy history of about n messages, the oldest
// 90% of it compressed in 40-message tier-1 blocks by one Compress call.
func benchSession(b *testing.B, n int) ([]CoreMessage, CompressionState, Config) {
	b.Helper()
	c := newConvo(7)
	for len(c.msgs) < n {
		c.randomTurn("")
	}
	cfg := DefaultConfig(200000)
	st := ProcessTurn(ProcessTurnInput{Messages: c.msgs, State: CreateInitialState("bench", "/a"), Config: cfg, TokenCount: 1}).State
	var ranges []CompressRange
	for i := 1; i+40 < n*9/10; i += 41 {
		ranges = append(ranges, CompressRange{StartRef: IndexToRef(i), EndRef: IndexToRef(i + 39),
			Summary: fmt.Sprintf("summary of m%d and the 39 messages after it: tool work, facts kept, see archive", i)})
	}
	ar := ApplyCompression(ApplyInput{Ranges: ranges, Messages: ProjectView(c.msgs, st, cfg), State: st, Config: cfg, CallID: "setup", Archiver: newMemArchiver()})
	if len(ar.BlocksCreated) < len(ranges)/2 {
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
