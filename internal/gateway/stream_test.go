package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// streamBody is anthropicBody with stream on, as JSON.
func streamBody(t *testing.T, msgs []any) string {
	t.Helper()
	b := anthropicBody(msgs)
	b["stream"] = true
	return string(mustJSON(t, b))
}

func TestStreamHiddenCompressRound(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	for _, via := range []string{"sdk", "bytes"} {
		t.Run(via, func(t *testing.T) {
			hosts := &MemoryHosts{}
			model := &compressingModel{}
			r := newRig(t, model.script, withHosts(hosts))
			msgs := conversation(8, 1200, "What was in file 7?")
			var result string
			if via == "sdk" {
				o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "stream", Body: anthropicBody(msgs)})
				if !o.OK {
					t.Fatalf("SDK: %s", o.Message)
				}
				result = string(o.Result)
			} else {
				resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", streamBody(t, msgs), nil)
				if resp.StatusCode != 200 {
					t.Fatalf("got %d %s", resp.StatusCode, b)
				}
				if err := gatewaytest.CheckAnthropicStream(b); err != nil {
					t.Fatalf("stream invalid: %v\n%s", err, b)
				}
				if n := strings.Count(string(b), "event: message_start"); n != 1 {
					t.Errorf("got %d message_start events, want 1", n)
				}
				result = string(b) + streamText(t, b)
			}
			if strings.Contains(result, noa.CompressToolName) || !strings.Contains(result, "final answer") {
				t.Errorf("client got %s, want the final answer and no Compress", result)
			}
			if via == "sdk" {
				var m struct {
					Content []struct{ Type string }
					Usage   struct {
						InputTokens  int `json:"input_tokens"`
						OutputTokens int `json:"output_tokens"`
						CacheRead    int `json:"cache_read_input_tokens"`
					}
				}
				_ = json.Unmarshal([]byte(result), &m)
				if m.Usage.InputTokens != 1100 || m.Usage.OutputTokens != 60 || m.Usage.CacheRead != 7 {
					t.Errorf("usage %+v, want the sum of both rounds (1100, 60, 7)", m.Usage)
				}
				if len(m.Content) != 1 || m.Content[0].Type != "text" {
					t.Errorf("content %+v, want the answer only: the hidden round's thinking is not the client's", m.Content)
				}
			}
			reqs := r.up.Requests()
			if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), `"signature":"sig-c"`) || !strings.Contains(string(reqs[1].Body), "[Compressed conversation section]") {
				t.Errorf("upstream got %d requests; the continuation must carry the thinking and the compression", len(reqs))
			}
		})
	}
}

func TestStreamMixedCompressAndClientTool(t *testing.T) {
	hosts := &MemoryHosts{}
	model := &compressingModel{withTool: "read_file"}
	r := newRig(t, model.script, withHosts(hosts))
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", streamBody(t, conversation(8, 1200, "next?")), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if err := gatewaytest.CheckAnthropicStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
	s := string(b)
	if strings.Contains(s, noa.CompressToolName) || !strings.Contains(s, `"toolu_client"`) || !strings.Contains(s, `"stop_reason":"tool_use"`) {
		t.Errorf("stream %s: want the client's tool call only", s)
	}
	if !strings.Contains(s, `"index":1,"content_block":{"id":"toolu_client"`) && !strings.Contains(s, `"content_block":{"id":"toolu_client","input":{},"name":"read_file","type":"tool_use"},"index":1`) {
		t.Errorf("the client's tool call was not renumbered to index 1:\n%s", s)
	}
}

func TestStreamOpenAIHiddenRound(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	var compressed atomic.Bool
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		tags := refs(req.Body)
		if hasTool(req.Body, noa.CompressToolName) && len(tags) >= 4 && compressed.CompareAndSwap(false, true) {
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("call_c", noa.CompressToolName,
				`{"content":[{"start":"`+tags[0]+`","end":"`+tags[len(tags)-3]+`","summary":"The user asked for several lookups; each returned a long block of repeated text."}]}`)},
				Usage: scriptedmodel.Usage{InputTokens: 500, OutputTokens: 20}}
		}
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("done")}, Usage: scriptedmodel.Usage{InputTokens: 100, OutputTokens: 5}}
	}, withHosts(hosts))
	msgs := []any{map[string]any{"role": "user", "content": "look things up"}}
	for i := 0; i < 6; i++ {
		id := "call_" + string(rune('a'+i))
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": `{}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat("result text ", 150)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "summarize"})
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.OpenAI, BaseURL: r.url + "/openai/v1", APIKey: "k", Kind: "stream",
		Body: map[string]any{"model": testModel, "messages": msgs, "stream_options": map[string]any{"include_usage": true}}})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	res := string(o.Result)
	if !strings.Contains(res, `"content":"done"`) || strings.Contains(res, "Compress") || !strings.Contains(res, `"prompt_tokens":600`) || !strings.Contains(res, `"finish_reason":"stop"`) {
		t.Errorf("client got %s, want the final answer, usage summed, finish stop", res)
	}
	if n := len(r.up.Requests()); n != 2 {
		t.Errorf("upstream got %d requests, want 2", n)
	}
	// And the same through the raw bytes of a fresh conversation.
	compressed.Store(false)
	body := mustJSON(t, map[string]any{"model": testModel, "stream": true, "messages": append([]any{map[string]any{"role": "user", "content": "another"}}, msgs[1:]...)})
	resp, b := r.do(t, context.Background(), http.MethodPost, "/openai/v1/chat/completions", string(body), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if err := gatewaytest.CheckOpenAIStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
	if strings.Contains(string(b), "Compress") || strings.Count(string(b), `"id":"chatcmpl-gwt`) != strings.Count(string(b), "data: {") {
		t.Errorf("stream leaks Compress or changes id mid-way:\n%s", b)
	}
	if strings.Contains(string(b), `"usage":{`) {
		t.Errorf("the client did not ask for usage, yet got a usage chunk:\n%s", b)
	}
}

func TestStreamProjectedClientDisconnect(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("never finished")}, Stall: true, StallAfter: 2}
	}, withHosts(hosts))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/v1/messages", strings.NewReader(streamBody(t, conversation(1, 100, "q"))))
	_, ended := r.up.Aborted()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	_, _ = resp.Body.Read(buf)
	cancel()
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream request was not cancelled")
	}
}

// streamText joins the text deltas of an Anthropic stream.
func streamText(t *testing.T, b []byte) string {
	t.Helper()
	return joinEvents(t, b, func(data []byte) string {
		var d struct {
			Delta struct{ Type, Text string }
		}
		if json.Unmarshal(data, &d) == nil && d.Delta.Type == "text_delta" {
			return d.Delta.Text
		}
		return ""
	})
}

// joinEvents joins what text makes of each event's data in stream b.
func joinEvents(t *testing.T, b []byte, text func(data []byte) string) string {
	t.Helper()
	events, err := gatewaytest.ParseSSE(b)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, ev := range events {
		out.WriteString(text([]byte(ev.Data)))
	}
	return out.String()
}
