package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// agentModel is the model of the replayed agent conversations: a window
// the scenario outgrows several times over.
const agentModel = "agent-model"

func withAgent(hosts *MemoryHosts, window int) rigOption {
	return func(o *Options) {
		o.Hosts = hosts
		o.Config.Models = map[string]config.GatewayModel{agentModel: {ContextWindow: window}}
	}
}

// fixedClock is a clock that never moves, so archives and states repeat.
func fixedClock() time.Time { return time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC) }

func TestCachePrefixStaysStable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		marks bool
	}{{"client cache breakpoints", true}, {"no breakpoints", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own rig and hosts
			hosts := &MemoryHosts{Now: fixedClock}
			const window = 60000
			r := newRig(t, gatewaytest.Agent, withAgent(hosts, window))
			sc := gatewaytest.NewScenario(gatewaytest.ScenarioOptions{Tasks: 36, FilesPerTask: 3, MinFileBytes: 2000, MaxFileBytes: 9000, Facts: 6, Seed: 7})
			res, err := gatewaytest.Replay(context.Background(), sc, gatewaytest.ReplayOptions{
				URL: r.url + "/v1/messages", Model: agentModel, System: "You are a careful log analyst.",
				CacheControl: tc.marks, Header: map[string]string{"x-api-key": "k", HeaderSession: "prefix"},
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range sc.Steps {
				if st.Question() && !res[i].Answered {
					t.Errorf("step %d asked %s: got %q", i, st.Fact, res[i].Answer)
				}
			}
			reqs := r.up.Requests()
			stable, compresses := 0, 0
			var prev gatewaytest.Prefix
			for i, q := range reqs {
				p, err := gatewaytest.RequestPrefix(q)
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 && prev.Stable(p) {
					stable++
				} else if i > 0 {
					t.Logf("request %d: prefix changed", q.Seq)
				}
				prev = p
				if scriptedmodel.EstimateTokens(q.Body) > window*5/4 {
					t.Errorf("request %d is ~%d tokens, far past the %d window", q.Seq, scriptedmodel.EstimateTokens(q.Body), window)
				}
			}
			for _, h := range hosts.hosts {
				for _, m := range h.Messages() {
					if m.ToolName == "Compress" && m.ContentType == "tool-call" {
						compresses++
					}
				}
			}
			share := float64(stable) / float64(len(reqs)-1)
			t.Logf("%d upstream requests, %d Compress calls, prefix stable on %d of %d consecutive pairs (%.1f%%)", len(reqs), compresses, stable, len(reqs)-1, 100*share)
			if compresses < 3 {
				t.Errorf("got %d Compress calls, want the conversation compressed several times", compresses)
			}
			if share < 0.9 {
				t.Errorf("prefix stable on %.1f%% of consecutive requests, want at least 90%%", 100*share)
			}
		})
	}
}
