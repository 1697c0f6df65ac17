package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// countBody is a count_tokens body: what the Messages API counts of a
// request (no max_tokens, no metadata).
func countBody(msgs []any) map[string]any {
	b := anthropicBody(msgs)
	delete(b, "max_tokens")
	delete(b, "metadata")
	delete(b, "x_future_field")
	return b
}

// upstreamPart decodes one top-level field of a forwarded body.
func upstreamPart(t *testing.T, body []byte, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("forwarded body is not JSON: %v", err)
	}
	return m[key]
}

func TestCountTokensCountsTheProjection(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	model := &compressingModel{}
	r := newRig(t, model.script, withHosts(hosts))
	msgs := conversation(8, 1200, "What was in file 7?")
	b, _ := json.Marshal(anthropicBody(msgs))
	// The key the SDK sends below: counting sees the conversations of
	// the credential it carries.
	if resp, body := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != 200 {
		t.Fatalf("first request: %d %s", resp.StatusCode, body)
	}
	if !model.done {
		t.Fatal("the model did not compress; the test needs a compressed conversation")
	}
	var h *memHost
	for _, v := range hosts.hosts {
		h = v
	}
	before, stateBefore := len(h.Messages()), noa.CloneState(h.st)

	// The client's next turn, counted first.
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": "And file 3?"})
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "count_tokens", Body: countBody(next)})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	reqs := r.up.Requests()
	counted := reqs[len(reqs)-1]
	if counted.Path != "/v1/messages/count_tokens" {
		t.Fatalf("the last upstream request went to %s, want /v1/messages/count_tokens", counted.Path)
	}
	var res struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(o.Result, &res); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(countBody(next))
	if want := scriptedmodel.EstimateTokens(counted.Body); res.InputTokens != want {
		t.Errorf("client got input_tokens %d, want the upstream's count of the projected body, %d", res.InputTokens, want)
	}
	// noa's resident prompt carries the compression rules (issue 27); the
	// span it compressed must save more than the rest of what noa adds.
	if raw := scriptedmodel.EstimateTokens(raw) + scriptedmodel.EstimateTokens([]byte(noa.BuildSystemPrompt(noa.Sections{}))); res.InputTokens >= raw {
		t.Errorf("counted %d tokens, want fewer than the unprojected body with noa's prompt, %d: the compressed span should be a summary", res.InputTokens, raw)
	}
	if got := len(h.Messages()); got != before {
		t.Errorf("count_tokens recorded %d messages, want none", got-before)
	}
	if !reflect.DeepEqual(noa.CloneState(h.st), stateBefore) {
		t.Errorf("count_tokens changed the conversation's noa state")
	}

	// The same turn sent for real is projected exactly as it was counted.
	b, _ = json.Marshal(anthropicBody(next))
	if resp, body := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{"x-api-key": "k"}); resp.StatusCode != 200 {
		t.Fatalf("next request: %d %s", resp.StatusCode, body)
	}
	reqs = r.up.Requests()
	sent := reqs[len(reqs)-1]
	for _, k := range []string{"messages", "system", "tools", "model"} {
		if c, s := upstreamPart(t, counted.Body, k), upstreamPart(t, sent.Body, k); !bytes.Equal(c, s) {
			t.Errorf("%s counted differs from %s sent:\n%s\n%s", k, k, c, s)
		}
	}
	if !bytes.Contains(counted.Body, []byte(noa.SummaryHeader)) {
		t.Errorf("the counted body lacks the summary")
	}
}

func TestCountTokensNewConversationCreatesNothing(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Reply{} }, withHosts(hosts))
	msgs := conversation(3, 400, "count me")
	b, _ := json.Marshal(countBody(msgs))
	resp, body := r.do(t, context.Background(), http.MethodPost, "/v1/messages/count_tokens", string(b), map[string]string{HeaderSession: "counted"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"input_tokens"`)) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	if len(hosts.hosts) != 0 {
		t.Errorf("count_tokens created conversations %v, want none", keys(hosts.hosts))
	}
	if _, _, ok := r.gw.convs.Match(Scope{Cred: credentialScope(anthropicAPI, http.Header{}, ""), Name: "counted"}, (mustParse(t, b)).ids()); ok {
		t.Errorf("count_tokens entered the conversation in the index")
	}
	up := r.up.Requests()[0].Body
	if !hasTool(up, noa.CompressToolName) || len(refs(up)) != 5 || r.up.Requests()[0].Header.Get(HeaderSession) != "" {
		t.Errorf("forwarded %s, want the projection of a new conversation (noa's tools, a ref tag per user-side part, no session header)", up)
	}

	// A body the gateway cannot read is counted as it came.
	resp, _ = r.do(t, context.Background(), http.MethodPost, "/v1/messages/count_tokens", `{"model":"m","messages":7}`, nil)
	if got := r.up.Requests()[1].Body; resp.StatusCode != 200 || string(got) != `{"model":"m","messages":7}` {
		t.Errorf("unreadable body: got %d, forwarded %s", resp.StatusCode, got)
	}
}

func mustParse(t *testing.T, body []byte) *request {
	t.Helper()
	q, err := parseAnthropic(context.Background(), body, config.DefaultMaxJSONDepth)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
