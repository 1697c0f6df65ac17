package session

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

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
	h.st = h.synced(h.msgs, h.st)
	return h
}

// benchCall is one tools/call as the MCP front records it: the call, then
// its result with a turn.
func benchCall(b *testing.B, h *Host, args json.RawMessage, text string) {
	rec, err := h.Record(context.Background(), toolCall("fs:read", args))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Turn(context.Background(), toolResult(rec[0], text)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHostCall measures what the session host adds to one tools/call
// (record the call, record the result, run noa over the session, append to
// the transcript; the MCP shaping is the front's, measured there) at 100, 1,000 and 10,000 recorded
// messages, with and without the fsync. The baseline is noa.ProcessTurn
// alone over the same history, measured in the same run, so the host's own
// overhead reads as the ratio of the two. The history is synthetic tool
// traffic that is never compressed, so at 10,000 messages (about 1.3M
// tokens against a 200K window) every call also renders a nudge: the worst
// case.
func BenchmarkHostCall(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, sync := range []bool{true, false} {
			b.Run(fmt.Sprintf("messages=%d/fsync=%v", n, sync), func(b *testing.B) {
				h := benchHost(b, n, sync)
				rng := newRand(2)
				results := make([]string, 64)
				for i := range results {
					results[i] = words(rng, 100)
				}
				args := json.RawMessage(`{"path":"/bench"}`)
				// Each iteration's call is taken back out afterwards (outside
				// the timer) so every call sees exactly n messages.
				st, nextID, total := h.st, h.nextID, h.total
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					benchCall(b, h, args, results[i%len(results)])
					b.StopTimer()
					for _, m := range h.msgs[n:] {
						delete(h.index, m.ID)
					}
					h.msgs, h.st, h.nextID, h.total = h.msgs[:n], st, nextID, total
					b.StartTimer()
				}
			})
		}
		b.Run(fmt.Sprintf("messages=%d/baseline=ProcessTurn", n), func(b *testing.B) {
			h := benchHost(b, n, false)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				noa.ProcessTurn(noa.ProcessTurnInput{Messages: h.msgs, State: h.st, Config: h.cfg, CountTokens: h.count.count})
			}
		})
	}
}
