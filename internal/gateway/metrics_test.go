package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcproxy/mcproxy/internal/metrics"
)

// TestMetricsCountRounds: a request whose model compresses in a hidden
// round is counted once, with its hidden round, the client's tokens and
// what went upstream over both rounds, and the usage the model reported
// summed; a request forwarded unprojected counts as a request only. Both
// answers, JSON and streamed.
func TestMetricsCountRounds(t *testing.T) {
	for _, stream := range []bool{false, true} {
		model := &preambleModel{}
		m := metrics.New(metrics.Options{})
		r := newRig(t, model.script, withHosts(&MemoryHosts{}), noSummaryRound, func(o *Options) { o.Metrics = m })
		body := anthropicBody(conversation(20, 1200, "What was in file 7?"))
		body["stream"] = stream
		b, _ := json.Marshal(body)
		resp, out := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %v: got %d %s", stream, resp.StatusCode, out)
		}
		if n := len(r.up.Requests()); n != 2 {
			t.Fatalf("stream %v: the model got %d requests, want 2 (a hidden Compress round, then the answer)", stream, n)
		}
		g := m.GatewayTotals()
		if g.Requests != 1 || g.Projected != 1 || g.HiddenRounds != 1 || g.ClientTokens <= 0 {
			t.Errorf("stream %v: got %+v, want 1 request projected, 1 hidden round and the client's tokens", stream, g)
		}
		// The second round reads the conversation compressed: less than
		// twice the client's.
		if g.ForwardedTokens <= g.ClientTokens || g.ForwardedTokens >= 2*g.ClientTokens {
			t.Errorf("stream %v: forwarded %d tokens over two rounds for a client's %d, want between one and two times it", stream, g.ForwardedTokens, g.ClientTokens)
		}
		if g.UsageInput <= 0 {
			t.Errorf("stream %v: got usage input %d, want the model's reported input summed", stream, g.UsageInput)
		}
	}

	m := metrics.New(metrics.Options{})
	r := newRig(t, (&preambleModel{}).script, func(o *Options) { o.Metrics = m }) // no hosts: forwarded as it came
	b, _ := json.Marshal(anthropicBody(conversation(2, 100, "hi")))
	if resp, out := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("unprojected: got %d %s", resp.StatusCode, out)
	}
	if g := m.GatewayTotals(); g != (metrics.Gateway{Requests: 1}) {
		t.Errorf("unprojected: got %+v, want one request and nothing else", g)
	}
}
