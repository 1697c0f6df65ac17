package session

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// benchHost is a session already holding n recorded messages (n/2 tool
// calls with ~100-word results), counted with the production tokenizer. The
// history is loaded directly rather than through n/2 calls, which would
// take minutes at 10,000 messages.
func benchHost(b *testing.B, n int, sync bool) *Host {
	b.Helper()
	counter, err := tokens.New("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	opts := testOptions(b)
	opts.Noa = noa.DefaultConfig(DefaultContextLimit)
	opts.Count = counter.Count
	opts.StateEvery = 1 << 30
	opts.noSync = !sync
	h := openHost(b, opts, "bench")
	rng := newRand(1)
	for len(h.msgs) < n {
		msgID, callID := h.newIDs()
		h.push(noa.CoreMessage{ID: msgID, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "fs:read", ToolCallID: callID, Text: `{"path":"/x"}`})
		resID, _ := h.newIDs()
		h.push(noa.CoreMessage{ID: resID, Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "fs:read", ToolCallID: callID, Text: words(rng, 100)})
	}
	h.startEngine(h.msgs, h.eng.State())
	h.eng.Turn(0) // refs and the view, as a session restored at Open has them after its first call
	return h
}

// benchCall is one tools/call as the MCP front records it: the call
// (written, its fsync left to the result's), then its result with a turn.
func benchCall(b *testing.B, h *Host, args json.RawMessage, text string) {
	rec, err := h.RecordUnsynced(context.Background(), toolCall("fs:read", args))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Turn(context.Background(), toolResult(rec[0], text)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHostCall measures what the session host adds to one tools/call
// (record the call, record the result, run noa over the session, append to
// the transcript; the MCP shaping is the front's, measured there) at 100,
// 1,000, 10,000 and 50,000 recorded messages, with and without the fsync.
// The baseline is noa.ProcessTurn alone over the same history, in the same
// run: what every call cost before the host ran noa incrementally. The
// history is synthetic tool traffic that is never compressed, so from
// 10,000 messages on (about 1.3M tokens against a 200K window) every call
// is over the window: the worst case.
//
// The calls made are taken back out (outside the timer) whenever they have
// grown the session by a tenth (at least 20 messages), so every call sees
// between n and 1.1n messages; the engine cannot drop messages, so taking
// them out restarts it from the state it had, which is O(n) and untimed.
func BenchmarkHostCall(b *testing.B) {
	for _, n := range []int{100, 1000, 10000, 50000} {
		for _, sync := range []bool{true, false} {
			b.Run(fmt.Sprintf("messages=%d/fsync=%v", n, sync), func(b *testing.B) {
				h := benchHost(b, n, sync)
				rng := newRand(2)
				results := make([]string, 64)
				for i := range results {
					results[i] = words(rng, 100)
				}
				args := json.RawMessage(`{"path":"/bench"}`)
				st, nextID, total, seq := h.eng.State(), h.nextID, h.total, h.seq
				slack := max(n/10, 20)
				runtime.GC()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					benchCall(b, h, args, results[i%len(results)])
					if len(h.msgs) < n+slack {
						continue
					}
					b.StopTimer()
					for _, m := range h.msgs[n:] {
						delete(h.index, m.ID)
					}
					h.msgs, h.nextID, h.total, h.seq = h.msgs[:n], nextID, total, seq
					h.startEngine(h.msgs, st)
					runtime.GC()
					b.StartTimer()
				}
				if sync {
					b.StopTimer()
					reportCheckpointShare(b, h)
				}
			})
		}
		b.Run(fmt.Sprintf("messages=%d/baseline=ProcessTurn", n), func(b *testing.B) {
			h := benchHost(b, n, false)
			st := h.eng.State()
			runtime.GC()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				noa.ProcessTurn(noa.ProcessTurnInput{Messages: h.msgs, State: st, Config: h.cfg, CountTokens: h.count.count})
			}
		})
	}
}

// reportCheckpointShare reports the share of a periodic state.json write
// each turn bears at the session's size (state-ns/turn): the calls above
// run with checkpoints off, since a Manager's host writes them off the
// call path (checkpoint.go), but the write is still the process's work.
// One write is timed, as the pool's goroutine makes it (the state copied,
// encoded and written with its fsyncs), and divided by the turns between
// two of them (checkpointDue).
func reportCheckpointShare(b *testing.B, h *Host) {
	const writes = 3
	start := time.Now()
	for range writes {
		h.stateSeq = -1 // as if a turn had been recorded since
		if err := h.checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
	every := max(DefaultStateEvery, len(h.msgs)/stateShare)
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/writes/float64(every), "state-ns/turn")
}

// BenchmarkHostPayload measures the host's share of a call carrying a
// large payload, with the production tokenizer and fsync: a 200 KiB result
// and a 5 MB write_file argument, each cut to size (archived once, held
// head-and-tail). The baseline in the same run is tokenizing the payload
// once, which the host must not exceed by much.
func BenchmarkHostPayload(b *testing.B) {
	counter, err := tokens.New("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	rng := newRand(9)
	for _, tc := range []struct {
		name string
		size int
		arg  bool
	}{{"result=200KiB", 200 << 10, false}, {"write_file=5MB", 5 << 20, true}} {
		payload := words(rng, tc.size/5)
		for len(payload) < tc.size {
			payload += payload
		}
		payload = payload[:tc.size]
		b.Run(tc.name+"/host", func(b *testing.B) {
			opts := testOptions(b)
			opts.Noa = noa.DefaultConfig(DefaultContextLimit)
			opts.MaxResultTokens = DefaultMaxResultTokens
			opts.Count, opts.CountSplitsAtLines = counter.Count, true // as serve runs it
			h := openHost(b, opts, "payload")
			args, _ := json.Marshal(map[string]any{"path": "/big.txt", "content": payload})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c := toolCall("fs:write_file", args)
				result := "Successfully wrote to /big.txt"
				if !tc.arg {
					c, result = toolCall("fs:read_text_file", json.RawMessage(`{"path":"/big.txt"}`)), payload
				}
				c.CutToSize = true
				rec, err := h.Record(context.Background(), c)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Turn(context.Background(), toolResult(rec[0], result)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/baseline=count-once", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				counter.Count(payload)
			}
		})
	}
}
