package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// nudged reports whether a forwarded request carries noa's nudge.
func nudged(body []byte) bool { return bytes.Contains(body, []byte("[noa] Context at")) }

// preambleModel writes text, then calls Compress over the request's refs,
// the first time a request offers Compress with enough of them; every other
// request gets a text answer. nudges records, per request, whether it
// carried noa's nudge.
type preambleModel struct {
	mu       sync.Mutex
	done     bool
	nudges   []bool
	thinking bool // think (signed) before the text
}

const preamble = "I will compress the early reads first."

func (m *preambleModel) script(r *scriptedmodel.Request) scriptedmodel.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nudges = append(m.nudges, nudged(r.Body))
	tags := refs(r.Body)
	if m.done || !hasTool(r.Body, noa.CompressToolName) || len(tags) < 4 {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("final answer")}}
	}
	m.done = true
	// tags[0] is the task, which noa never compresses.
	args := fmt.Sprintf(`{"content":[{"start":%q,"end":%q,"topic":"reads","summary":"Earlier reads, each a long run of repeated text; nothing else of note."}]}`,
		tags[1], tags[len(tags)-3])
	parts := []scriptedmodel.Part{scriptedmodel.Text(preamble), scriptedmodel.ToolCall("toolu_pre", noa.CompressToolName, args)}
	if m.thinking {
		parts = append([]scriptedmodel.Part{scriptedmodel.Thinking("The reads are done; compress them.", "sig-p")}, parts...)
	}
	return scriptedmodel.Reply{Parts: parts}
}

// openaiToolConversation is a tool-heavy Chat Completions conversation of n
// lookups, each result size bytes.
func openaiToolConversation(n, size int) []any {
	msgs := []any{map[string]any{"role": "user", "content": "look things up"}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": fmt.Sprintf(`{"i":%d}`, i)}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf("result %d: ", i) + strings.Repeat(fmt.Sprintf("text of result %d. ", i), size/18)})
	}
	return append(msgs, map[string]any{"role": "user", "content": "summarize"})
}

// visible is what the client can see of an SDK's final object: Anthropic's
// content blocks (type, text, thinking, tool name) and stop reason, or
// OpenAI's message text, tool calls and finish reason.
func visible(t *testing.T, sdk gatewaytest.SDK, result json.RawMessage) any {
	t.Helper()
	if sdk == gatewaytest.Anthropic {
		var m struct {
			Content []struct {
				Type, Text, Thinking, Name string
			}
			StopReason string `json:"stop_reason"`
		}
		if err := json.Unmarshal(result, &m); err != nil {
			t.Fatalf("reading %s: %v", result, err)
		}
		return m
	}
	var c struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []struct {
					Function struct{ Name string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(result, &c); err != nil || len(c.Choices) == 0 {
		t.Fatalf("reading %s: %v", result, err)
	}
	return c.Choices[0]
}

// TestHiddenRoundTextSameStreamedOrNot: when the model writes text before a
// hidden Compress call, the streamed answer and the JSON one carry the same
// client-visible content (issue 27: streams passed that text on, JSON
// answers dropped it). Asked to compress (a nudge), the text belongs to the
// hidden round and is dropped; unasked, streaming sent it at once, so both
// deliver it before the final answer.
func TestHiddenRoundTextSameStreamedOrNot(t *testing.T) {
	t.Parallel()
	gatewaytest.RequireSDKs(t)
	asked := func() map[string]any { return anthropicBody(conversation(20, 1200, "What was in file 7?")) }
	unasked := func() map[string]any { return anthropicBody(conversation(8, 1200, "What was in file 7?")) }
	for _, tc := range []struct {
		name     string
		sdk      gatewaytest.SDK
		path     string
		body     func() map[string]any
		nudge    bool
		thinking bool
	}{
		{"anthropic asked", gatewaytest.Anthropic, "", asked, true, false},
		{"anthropic unasked", gatewaytest.Anthropic, "", unasked, false, false},
		{"anthropic asked thinking", gatewaytest.Anthropic, "", asked, true, true},
		{"anthropic unasked thinking", gatewaytest.Anthropic, "", unasked, false, true},
		{"openai asked", gatewaytest.OpenAI, "/openai/v1", func() map[string]any {
			return map[string]any{"model": testModel, "messages": openaiToolConversation(20, 1200)}
		}, true, false},
		{"openai unasked", gatewaytest.OpenAI, "/openai/v1", func() map[string]any {
			return map[string]any{"model": testModel, "messages": openaiToolConversation(6, 1200)}
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]any{}
			for _, kind := range []string{"create", "stream"} {
				model := &preambleModel{thinking: tc.thinking}
				r := newRig(t, model.script, withHosts(&MemoryHosts{}), noSummaryRound)
				o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: tc.sdk, BaseURL: r.url + tc.path, APIKey: "k", Kind: kind, Body: tc.body()})
				if !o.OK {
					t.Fatalf("%s: SDK: %s", kind, o.Message)
				}
				if len(model.nudges) != 2 || model.nudges[0] != tc.nudge {
					t.Fatalf("%s: upstream got %d requests, nudged %v; want 2, the first nudged %v", kind, len(model.nudges), model.nudges, tc.nudge)
				}
				// The continuation shows the model its text when the client
				// got it, so it carries on rather than writing it again, and
				// never text the client did not get, or the model would take
				// it for said; thinking goes back signed either way.
				cont := r.up.Requests()[1].Body
				if has := bytes.Contains(cont, []byte(preamble)); has == tc.nudge {
					t.Errorf("%s: the continuation carries the preamble: got %v, want %v", kind, has, !tc.nudge)
				}
				if tc.thinking && !bytes.Contains(cont, []byte(`"signature":"sig-p"`)) {
					t.Errorf("%s: the continuation lacks the signed thinking", kind)
				}
				if res := string(o.Result); strings.Contains(res, "sig-p") == tc.nudge && tc.thinking {
					t.Errorf("%s: client got %s; want the thinking only if unasked", kind, res)
				}
				got[kind] = visible(t, tc.sdk, o.Result)
				res := string(o.Result)
				if strings.Contains(res, noa.CompressToolName) || !strings.Contains(res, "final answer") || strings.Contains(res, preamble) == tc.nudge {
					t.Errorf("%s: client got %s; want the final answer, no Compress, and the preamble only if unasked", kind, res)
				}
			}
			if diff := cmp.Diff(got["create"], got["stream"]); diff != "" {
				t.Errorf("streamed and JSON answers differ (-json +stream):\n%s", diff)
			}
		})
	}
}

// TestHiddenRoundHeldStreamValid: a held round's stream, read as bytes,
// is a valid stream with no block of the hidden round and indexes from 0.
func TestHiddenRoundHeldStreamValid(t *testing.T) {
	model := &preambleModel{}
	r := newRig(t, model.script, withHosts(&MemoryHosts{}))
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", streamBody(t, conversation(20, 1200, "q")), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, b)
	}
	if err := gatewaytest.CheckAnthropicStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
	if s := string(b); strings.Contains(s, preamble) || strings.Contains(s, `"index":1`) || streamText(t, b) != "final answer" {
		t.Errorf("stream %s: want the final answer alone, at index 0", s)
	}

	model = &preambleModel{}
	r = newRig(t, model.script, withHosts(&MemoryHosts{}))
	body := mustJSON(t, map[string]any{"model": testModel, "stream": true, "messages": openaiToolConversation(20, 1200)})
	resp, b = r.do(t, context.Background(), http.MethodPost, "/openai/v1/chat/completions", string(body), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, b)
	}
	if err := gatewaytest.CheckOpenAIStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
	if s := string(b); strings.Contains(s, "early reads") || strings.Contains(s, noa.CompressToolName) {
		t.Errorf("stream leaks the hidden round:\n%s", s)
	}
}

// retryingModel reads an archive under tool call id toolu_dup, then calls
// Compress under the same id (the host cannot record it twice), and once
// it reads that this call failed calls Compress again as toolu_ok; then it
// answers. Under tool_choice none it says "forced answer".
type retryingModel struct {
	mu   sync.Mutex
	args string
	saw  bool // a request showed the model its failed call
}

const failedMark = "call failed and changed nothing"

func (m *retryingModel) script(r *scriptedmodel.Request) scriptedmodel.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	body := string(r.Body)
	if strings.Contains(body, `"tool_choice":{"type":"none"}`) || strings.Contains(body, `"tool_choice":"none"`) {
		return scriptedmodel.Say("forced answer")
	}
	// Not the example ref of noa's prompt, a system message in OpenAI's
	// format.
	tags := slices.DeleteFunc(refs(r.Body), func(ref string) bool {
		return strings.Contains(noa.BuildSystemPrompt(noa.Sections{}), "["+ref+" ")
	})
	switch {
	case !strings.Contains(body, `"toolu_dup"`):
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("toolu_dup", ReadArchiveTool, fmt.Sprintf(`{"ref":%q}`, tags[0]))}}
	case !strings.Contains(body, failedMark):
		m.args = fmt.Sprintf(`{"content":[{"start":%q,"end":%q,"topic":"reads","summary":"Read files 0 to 5 earlier; each held a long run of repeated lines naming its number."}]}`, tags[1], tags[len(tags)-3])
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("toolu_dup", noa.CompressToolName, m.args)}}
	case !strings.Contains(body, `"toolu_ok"`):
		m.saw = true
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("toolu_ok", noa.CompressToolName, m.args)}}
	}
	return scriptedmodel.Say("real answer")
}

// TestFailedHiddenCallRetried: a hidden call that fails is answered to the
// model as a tool error saying how to call again, in a further hidden
// round; the model retries and the client gets its real answer (issue 27:
// the client got a 200 with empty content). With no round left for the
// retry, the final round (tool_choice none) answers the client.
func TestFailedHiddenCallRetried(t *testing.T) {
	for _, api := range []string{"anthropic", "openai"} {
		for _, stream := range []bool{false, true} {
			for _, hostsName := range []string{"memory", "session"} {
				for _, rounds := range []int{4, 2} {
					t.Run(fmt.Sprintf("%s stream=%v %s rounds=%d", api, stream, hostsName, rounds), func(t *testing.T) {
						testFailedHiddenCall(t, api, stream, hostsName, rounds)
					})
				}
			}
		}
	}
}

func testFailedHiddenCall(t *testing.T, api string, stream bool, hostsName string, rounds int) {
	var hosts Hosts = &MemoryHosts{}
	if hostsName == "session" {
		hosts = sessionHosts(t, t.TempDir())
	}
	model := &retryingModel{}
	r := newRig(t, model.script, withAnyHosts(hosts), func(o *Options) { o.Config.MaxHiddenRounds = rounds })
	body, path := anthropicBody(conversation(8, 1200, "What was in file 7?")), "/v1/messages"
	if api == "openai" {
		body, path = map[string]any{"model": testModel, "messages": openaiToolConversation(6, 1200)}, "/openai/v1/chat/completions"
	}
	body["stream"] = stream
	resp, b := r.do(t, context.Background(), http.MethodPost, path, string(mustJSON(t, body)), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, b)
	}
	// Four rounds: the read, the failed Compress, its retry, the answer.
	// Two: the read, the failed Compress, then the final round.
	want, requests := "real answer", 4
	if rounds == 2 {
		want, requests = "forced answer", 3
	}
	if text := answerText(t, api, stream, b); text != want {
		t.Errorf("client got %q, want %q", text, want)
	}
	reqs := r.up.Requests()
	if len(reqs) != requests {
		t.Fatalf("upstream got %d requests, want %d", len(reqs), requests)
	}
	// The failed call is shown under an id of its own (the provider never
	// sees one tool call id twice), with how to call again.
	if failed := string(reqs[2].Body); !strings.Contains(failed, "toolu_dup_2") || !strings.Contains(failed, failedMark) || !strings.Contains(failed, "Call Compress again") {
		t.Errorf("the round after the failure shows the model %s; want the failed call as toolu_dup_2, with how to call again", failed)
	}
	if n := strings.Count(string(reqs[2].Body), `"is_error":true`); api == "anthropic" && n != 1 {
		t.Errorf("the round after the failure has %d is_error results, want the failed call's", n)
	}
	if rounds == 2 {
		return
	}
	if !model.saw {
		t.Error("no request showed the model that its call failed")
	}
	if n := strings.Count(string(reqs[3].Body), failedMark); n != 1 {
		t.Errorf("the answering round shows %d failed calls, want 1: the retry succeeds", n)
	}
	if mh, ok := hosts.(*MemoryHosts); ok {
		for _, h := range mh.hosts {
			if n := len(noa.ActiveBlocks(h.st)); n != 1 {
				t.Errorf("got %d blocks, want the retried Compress applied", n)
			}
		}
	}
}

// answerText is the text of a gateway answer: a JSON one's or a stream's
// (its framing checked), for api "anthropic" or "openai".
func answerText(t *testing.T, api string, stream bool, b []byte) string {
	t.Helper()
	switch {
	case api == "anthropic" && stream:
		if err := gatewaytest.CheckAnthropicStream(b); err != nil {
			t.Fatalf("stream invalid: %v\n%s", err, b)
		}
		return streamText(t, b)
	case api == "anthropic":
		var m struct{ Content []struct{ Type, Text string } }
		_ = json.Unmarshal(b, &m)
		var out strings.Builder
		for _, c := range m.Content {
			out.WriteString(c.Text)
		}
		return out.String()
	case stream:
		if err := gatewaytest.CheckOpenAIStream(b); err != nil {
			t.Fatalf("stream invalid: %v\n%s", err, b)
		}
		return joinEvents(t, b, func(data []byte) string {
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if json.Unmarshal(data, &c) == nil && len(c.Choices) > 0 {
				return c.Choices[0].Delta.Content
			}
			return ""
		})
	}
	var c struct {
		Choices []struct{ Message struct{ Content string } }
	}
	_ = json.Unmarshal(b, &c)
	if len(c.Choices) == 0 {
		return ""
	}
	return c.Choices[0].Message.Content
}
