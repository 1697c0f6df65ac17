package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// compressAt sets gateway.compress_at (0: the default).
func compressAt(f float64) rigOption {
	return func(o *Options) { o.Config.CompressAt = f }
}

// noSummaryRound turns the first round (firstround.go) off, for tests of
// what noa's nudge round does.
func noSummaryRound(o *Options) {
	off := false
	o.Config.SummaryRound = &off
}

// indented is v as the client below writes it: indented, so that a body
// the gateway re-encoded would differ from it in its bytes.
func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reads appends n tool reads, each result size bytes, to msgs (which end
// with a user message), answered and followed by a question.
func reads(msgs []any, from, n, size int, question string) []any {
	out := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": "Reading more."},
		map[string]any{"role": "user", "content": "Go on."})
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("toolu_g%02d", i)
		out = append(out,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/g%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": fmt.Sprintf("file g%d: ", i) + strings.Repeat(fmt.Sprintf("text of file g%d. ", i), size/17)}}})
	}
	return append(out, map[string]any{"role": "assistant", "content": "Read."}, map[string]any{"role": "user", "content": question})
}

// openaiConversation is a small Chat Completions conversation with a tool
// call.
func openaiConversation(question string) []any {
	return []any{map[string]any{"role": "system", "content": "You are terse."},
		map[string]any{"role": "user", "content": "Look it up."},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": `{"q":"x"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_1", "content": strings.Repeat("a result line. ", 40)},
		map[string]any{"role": "assistant", "content": "Found it."},
		map[string]any{"role": "user", "content": question}}
}

// TestNotEngagedForwardsTheClientsBytes: a conversation below
// gateway.compress_at is forwarded as the client's own bytes (no tools,
// system text, ref tags or nudge of noa's), streamed or not, for both
// APIs, while the gateway records its messages.
func TestNotEngagedForwardsTheClientsBytes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		openai bool
		stream bool
	}{{"anthropic", false, false}, {"anthropic stream", false, true}, {"openai", true, false}, {"openai stream", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := &MemoryHosts{}
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("answer") }, withHosts(hosts), compressAt(0))
			path, first, next := "/v1/messages", conversation(2, 200, "What was in file 1?"), []any(nil)
			if tc.openai {
				path, first = "/openai/v1/chat/completions", openaiConversation("What did it say?")
			}
			next = append(append([]any(nil), first...), map[string]any{"role": "assistant", "content": "It said a line."},
				map[string]any{"role": "user", "content": "And then?"})
			var sent [][]byte
			for _, msgs := range [][]any{first, next} {
				body := anthropicBody(msgs)
				if tc.openai {
					body = map[string]any{"model": testModel, "messages": msgs, "x_future_field": 1,
						"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": map[string]any{"type": "object"}}}}}
				}
				body["stream"] = tc.stream
				b := indented(t, body)
				sent = append(sent, b)
				resp, answer := r.do(t, context.Background(), http.MethodPost, path, string(b), map[string]string{"x-api-key": "k", "Authorization": "Bearer k"})
				if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte("answer")) {
					t.Fatalf("got %d %s, want the model's answer", resp.StatusCode, answer)
				}
			}
			reqs := r.up.Requests()
			if len(reqs) != len(sent) {
				t.Fatalf("upstream got %d requests, want %d", len(reqs), len(sent))
			}
			for i, q := range reqs {
				if !bytes.Equal(q.Body, sent[i]) {
					t.Errorf("request %d: upstream got\n%s\nwant the client's body byte for byte\n%s", i, q.Body, sent[i])
				}
			}
			if len(hosts.hosts) != 1 {
				t.Fatalf("got %d conversations, want 1", len(hosts.hosts))
			}
			parse := parseAnthropic
			if tc.openai {
				parse = parseOpenAI
			}
			q, err := parse(context.Background(), sent[1], config.DefaultMaxJSONDepth)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hosts.hosts {
				if got, want := len(h.Messages()), len(q.core); got != want || h.engaged {
					t.Errorf("the host recorded %d messages (engaged %v), want all %d, not engaged", got, h.engaged, want)
				}
			}
		})
	}
}

// engagedBody reports whether a forwarded Messages body carries noa's
// additions: its tools, its system text and ref tags.
func engagedBody(body []byte) bool {
	return hasTool(body, noa.CompressToolName) && hasTool(body, ReadArchiveTool) &&
		bytes.Contains(body, []byte(noa.SystemPromptHeader)) && len(refs(body)) > 0
}

// TestEngagesOnceAndStays: a conversation is forwarded as sent until its
// tokens reach compress_at of the window; from that request on it carries
// noa's additions, and the next request's prefix is the same, so the
// prompt cache is rewritten once.
func TestEngagesOnceAndStays(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }, withHosts(hosts), compressAt(0.5), noSummaryRound)
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 8, 2400, "What was in g7?")
	more := append(append([]any(nil), large...), map[string]any{"role": "assistant", "content": "ok"},
		map[string]any{"role": "user", "content": "And g3?"})
	for _, msgs := range [][]any{small, large, more} {
		b := indented(t, anthropicBody(msgs))
		if resp, answer := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, answer)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(reqs))
	}
	if engagedBody(reqs[0].Body) {
		t.Errorf("the small conversation carried noa's additions:\n%s", reqs[0].Body)
	}
	for i, q := range reqs[1:] {
		if !engagedBody(q.Body) {
			t.Errorf("request %d, past compress_at, lacks noa's tools, system text or ref tags:\n%s", i+2, q.Body)
		}
	}
	if !stablePrefix(t, reqs[1], reqs[2]) {
		t.Errorf("the request after engagement changed the prefix the one before it left for the cache")
	}
}

// stablePrefix reports whether request b keeps the prefix request a left
// for the prompt cache (gatewaytest.Prefix.Stable).
func stablePrefix(t *testing.T, a, b *scriptedmodel.Request) bool {
	t.Helper()
	p, err := gatewaytest.RequestPrefix(a)
	if err != nil {
		t.Fatal(err)
	}
	next, err := gatewaytest.RequestPrefix(b)
	if err != nil {
		t.Fatal(err)
	}
	return p.Stable(next)
}

// TestEngagementSurvivesRestart: an engaged conversation stays engaged
// after a restart even where the new configuration would not engage it
// (compress_at raised), because its session recorded the engagement.
func TestEngagementSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	sessions, index := filepath.Join(dir, "sessions"), filepath.Join(dir, "conversations.jsonl")
	withIndex := func(o *Options) {
		c, err := OpenConversations(index, ConversationsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o.Conversations = c
	}
	say := func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }
	large := reads(conversation(2, 200, "What was in file 1?"), 0, 8, 2400, "What was in g7?")
	more := append(append([]any(nil), large...), map[string]any{"role": "assistant", "content": "ok"},
		map[string]any{"role": "user", "content": "And g3?"})
	send := func(r *rig, msgs []any) []byte {
		t.Helper()
		b := indented(t, anthropicBody(msgs))
		if resp, answer := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, answer)
		}
		reqs := r.up.Requests()
		return reqs[len(reqs)-1].Body
	}
	first := sessionHosts(t, sessions)
	if body := send(newRig(t, say, withAnyHosts(first), compressAt(0.5), withIndex), large); !engagedBody(body) {
		t.Fatalf("the conversation past compress_at 0.5 did not engage:\n%s", body)
	}
	if err := first.Sessions.Close(); err != nil {
		t.Fatal(err)
	}
	second := sessionHosts(t, sessions)
	if body := send(newRig(t, say, withAnyHosts(second), compressAt(0.99), withIndex), more); !engagedBody(body) {
		t.Errorf("after the restart the engaged conversation went out without noa's additions:\n%s", body)
	}
	// A conversation of its own, new to the restarted gateway, is below
	// 0.99 and goes as sent: the engagement was the conversation's.
	other := conversation(3, 2400, "Another task.")
	if body := send(newRig(t, say, withAnyHosts(second), compressAt(0.99), withIndex), other); engagedBody(body) {
		t.Errorf("a new conversation below compress_at was engaged:\n%s", body)
	}
}

// TestCountTokensAgreesWithEngagement: count_tokens counts what
// /v1/messages would forward: the client's body below compress_at, the
// projection from the request that engages on.
func TestCountTokensAgreesWithEngagement(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		if req.Path == "/v1/messages/count_tokens" {
			return scriptedmodel.Reply{}
		}
		return scriptedmodel.Say("ok")
	}, withHosts(hosts), compressAt(0.5), noSummaryRound)
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 8, 2400, "What was in g7?")
	for _, msgs := range [][]any{small, large} {
		counted := indented(t, countBody(msgs))
		if resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages/count_tokens", string(counted), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("count_tokens: %d %s", resp.StatusCode, b)
		}
		if resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, anthropicBody(msgs))), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("messages: %d %s", resp.StatusCode, b)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("upstream got %d requests, want 4", len(reqs))
	}
	if want := indented(t, countBody(small)); !bytes.Equal(reqs[0].Body, want) {
		t.Errorf("count_tokens below compress_at counted\n%s\nwant the client's body as it came\n%s", reqs[0].Body, want)
	}
	for _, pair := range [][2]int{{0, 1}, {2, 3}} {
		c, s := reqs[pair[0]].Body, reqs[pair[1]].Body
		for _, k := range []string{"messages", "system", "tools"} {
			if a, b := canonical(upstreamPart(t, c, k)), canonical(upstreamPart(t, s, k)); !bytes.Equal(a, b) {
				t.Errorf("requests %d and %d: %s counted differs from %s sent:\n%s\n%s", pair[0]+1, pair[1]+1, k, k, a, b)
			}
		}
	}
	if !engagedBody(reqs[2].Body) {
		t.Errorf("count_tokens of the conversation past compress_at did not count noa's additions:\n%s", reqs[2].Body)
	}
}

// TestEngagesAtATokenCountWhateverTheWindow: compress_at_tokens engages a
// conversation whose window is far larger than it (compress_at's share of
// a 1M window would wait for 500K tokens), and only once its tokens reach
// it.
func TestEngagesAtATokenCountWhateverTheWindow(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }, withHosts(hosts), noSummaryRound,
		func(o *Options) {
			o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: 1_000_000}}
			o.Config.CompressAt = 0.5
			o.Config.CompressAtTokens = 4000
		})
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 8, 2400, "What was in g7?")
	for _, msgs := range [][]any{small, large} {
		b := indented(t, anthropicBody(msgs))
		if resp, answer := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, answer)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	if engagedBody(reqs[0].Body) {
		t.Errorf("the conversation below compress_at_tokens carried noa's additions:\n%s", reqs[0].Body)
	}
	if !engagedBody(reqs[1].Body) {
		t.Errorf("the conversation past compress_at_tokens (4000) of a 1M window went without noa's additions:\n%s", reqs[1].Body)
	}
}
