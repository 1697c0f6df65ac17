package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// overheadBody is a tool-heavy Messages API request whose conversation
// holds about tokens tokens (a quarter of its bytes): reads of 10 KB files.
func overheadBody(tokens int) []byte {
	const size = 10_000
	n := max(1, tokens*4/size)
	msgs := []any{map[string]any{"role": "user", "content": "Read the files and tell me about them."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("toolu_%04d", i)
		var text strings.Builder
		for line := 0; text.Len() < size; line++ {
			fmt.Fprintf(&text, "%05d file %d: request %d handled in %d ms by shard %d\n", line, i, line*7919%10007, line%900, line%16)
		}
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/f%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text.String()}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "I have read them."},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Which file was largest?", "cache_control": map[string]any{"type": "ephemeral"}}}})
	body := anthropicBody(msgs)
	body["model"] = agentModel
	b, _ := json.Marshal(body)
	return b
}

// post sends body to url and reads the answer whole.
func post(b *testing.B, c *http.Client, url string, body []byte) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("got %d", resp.StatusCode)
	}
}

// BenchmarkGatewayOverhead sends the same request straight to the scripted
// upstream and through the gateway (projection on, with the on-disk
// SessionHosts serve uses and with MemoryHosts, a 1M-token window so
// nothing is compressed, engaged from the first request so the whole
// projection is timed), alternately in one loop, and reports
// both times, the gateway's overhead per request and the ratio. The
// conversation is known from the first request on, as an agent's is after
// its first turn.
func BenchmarkGatewayOverhead(b *testing.B) {
	hosts := map[string]func(b *testing.B) Hosts{
		"session": func(b *testing.B) Hosts { return sessionHosts(b, b.TempDir()) },
		"memory":  func(*testing.B) Hosts { return &MemoryHosts{} },
	}
	for _, kind := range []string{"session", "memory"} {
		for _, tokens := range []int{10_000, 100_000, 500_000} {
			b.Run(fmt.Sprintf("%s/%dK", kind, tokens/1000), func(b *testing.B) { benchmarkOverhead(b, hosts[kind](b), tokens) })
		}
	}
}

func benchmarkOverhead(b *testing.B, hosts Hosts, tokens int) {
	body := overheadBody(tokens)
	up := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("the third") })
	defer up.Close()
	gw, err := New(Options{Hosts: hosts, Config: config.GatewayConfig{Enabled: true,
		Anthropic: config.GatewayProvider{BaseURL: up.URL},
		Models:    map[string]config.GatewayModel{agentModel: {ContextWindow: 1_000_000}}, CompressAt: engageAtOnce}})
	if err != nil {
		b.Fatal(err)
	}
	front := httptest.NewServer(mcptransport.Guard(gw, mcptransport.HTTPOptions{}))
	defer front.Close()
	c := &http.Client{}
	post(b, c, front.URL+"/v1/messages", body) // the conversation's first request
	up.Drain()
	var direct, through time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		post(b, c, up.URL+"/v1/messages", body)
		mid := time.Now()
		post(b, c, front.URL+"/v1/messages", body)
		through += time.Since(mid)
		direct += mid.Sub(start)
		up.Drain()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(direct.Nanoseconds())/n, "direct-ns/op")
	b.ReportMetric(float64(through.Nanoseconds())/n, "gateway-ns/op")
	b.ReportMetric(float64((through-direct).Nanoseconds())/n/1e6, "overhead-ms/op")
	b.ReportMetric(float64(through)/float64(direct), "ratio")
}
