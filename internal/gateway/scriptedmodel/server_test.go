package scriptedmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// post sends body to url and returns the status and the raw answer.
func post(t *testing.T, ctx context.Context, url string, body string) (int, []byte) {
	t.Helper()
	resp, b := gatewaytest.Do(t, ctx, http.MethodPost, url, body, map[string]string{"Content-Type": "application/json"})
	return resp.StatusCode, b
}

func richReply(*scriptedmodel.Request) scriptedmodel.Reply {
	return scriptedmodel.Reply{Parts: []scriptedmodel.Part{
		scriptedmodel.Thinking("Let me think about the weather in Paris.", "sig-1"),
		scriptedmodel.Text("Checking the weather — one moment."),
		scriptedmodel.ToolCall("toolu_1", "get_weather", `{"city":"Paris","units":"metric"}`),
	}, Usage: scriptedmodel.Usage{InputTokens: 120, OutputTokens: 40, CacheRead: 7}}
}

func TestAnthropicThroughSDK(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	s := scriptedmodel.New(richReply)
	defer s.Close()
	body := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": []any{map[string]any{"role": "user", "content": "weather?"}}}
	for _, kind := range []string{"create", "stream"} {
		t.Run(kind, func(t *testing.T) {
			o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: s.URL, APIKey: "sk-test", Kind: kind, Body: body})
			if !o.OK {
				t.Fatalf("SDK failed: %s %s", o.Name, o.Message)
			}
			var m struct {
				Role       string `json:"role"`
				StopReason string `json:"stop_reason"`
				Content    []struct {
					Type, Text, Thinking, Signature, ID, Name string
					Input                                     map[string]any
				} `json:"content"`
				Usage struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
					CacheRead    int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(o.Result, &m); err != nil {
				t.Fatal(err)
			}
			if m.Role != "assistant" || m.StopReason != "tool_use" || len(m.Content) != 3 {
				t.Fatalf("got %s", o.Result)
			}
			c := m.Content
			if c[0].Type != "thinking" || c[0].Thinking != "Let me think about the weather in Paris." || c[0].Signature != "sig-1" ||
				c[1].Type != "text" || c[1].Text != "Checking the weather — one moment." ||
				c[2].Type != "tool_use" || c[2].ID != "toolu_1" || c[2].Name != "get_weather" || c[2].Input["city"] != "Paris" {
				t.Errorf("got content %s, want thinking, text and the tool call as scripted", o.Result)
			}
			if m.Usage.InputTokens != 120 || m.Usage.OutputTokens != 40 || m.Usage.CacheRead != 7 {
				t.Errorf("got usage %+v, want 120 in, 40 out, 7 cache read", m.Usage)
			}
			if kind == "stream" && len(o.Events) < 10 {
				t.Errorf("got %d events, want the parts split over many deltas", len(o.Events))
			}
		})
	}
	// SDK 1.x sends the key as a bearer token; older ones as x-api-key.
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Stream || !reqs[1].Stream || reqs[1].Model != "claude-sonnet-4-5" {
		t.Fatalf("recorded %d requests, want a JSON then a streaming one", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("x-api-key") != "sk-test" && r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("request %d carries no key (headers %v)", r.Seq, r.Header)
		}
	}
}

func TestAnthropicStreamBytes(t *testing.T) {
	s := scriptedmodel.New(richReply)
	defer s.Close()
	code, b := post(t, context.Background(), s.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[]}`)
	if code != 200 {
		t.Fatalf("got %d %s", code, b)
	}
	if err := gatewaytest.CheckAnthropicStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
	for _, want := range []string{"event: ping", `"type":"thinking_delta"`, `"type":"signature_delta"`, `"type":"input_json_delta"`, `"type":"text_delta"`, `"stop_reason":"tool_use"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("stream lacks %s", want)
		}
	}
}

func TestOpenAIThroughSDK(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	s := scriptedmodel.New(func(r *scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{
			scriptedmodel.Text("Two calls coming."),
			scriptedmodel.ToolCall("call_a", "get_weather", `{"city":"Paris"}`),
			scriptedmodel.ToolCall("", "get_time", `{"tz":"Europe/Paris"}`),
		}, Usage: scriptedmodel.Usage{InputTokens: 50, OutputTokens: 9}}
	})
	defer s.Close()
	body := map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "weather and time?"}}}
	for _, kind := range []string{"create", "stream"} {
		t.Run(kind, func(t *testing.T) {
			b := body
			if kind == "stream" {
				b = map[string]any{"model": "gpt-4o", "messages": body["messages"], "stream_options": map[string]any{"include_usage": true}}
			}
			o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.OpenAI, BaseURL: s.URL + "/v1", APIKey: "sk-test", Kind: kind, Body: b})
			if !o.OK {
				t.Fatalf("SDK failed: %s %s", o.Name, o.Message)
			}
			var cc struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						Content   string `json:"content"`
						ToolCalls []struct {
							ID       string `json:"id"`
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(o.Result, &cc); err != nil {
				t.Fatal(err)
			}
			if len(cc.Choices) != 1 {
				t.Fatalf("got %s", o.Result)
			}
			ch := cc.Choices[0]
			if ch.FinishReason != "tool_calls" || ch.Message.Content != "Two calls coming." || len(ch.Message.ToolCalls) != 2 ||
				ch.Message.ToolCalls[0].ID != "call_a" || ch.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` ||
				ch.Message.ToolCalls[1].Function.Name != "get_time" || ch.Message.ToolCalls[1].ID == "" {
				t.Errorf("got %s, want the text and both calls", o.Result)
			}
			if cc.Usage.PromptTokens != 50 || cc.Usage.CompletionTokens != 9 {
				t.Errorf("got usage %+v, want 50/9", cc.Usage)
			}
		})
	}
	code, b := post(t, context.Background(), s.URL+"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	if code != 200 {
		t.Fatalf("got %d", code)
	}
	if err := gatewaytest.CheckOpenAIStream(b); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, b)
	}
}

func TestErrorsThroughSDK(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	tests := []struct {
		sdk     gatewaytest.SDK
		status  int
		errType string
	}{
		{gatewaytest.Anthropic, 429, "rate_limit_error"},
		{gatewaytest.Anthropic, 529, "overloaded_error"},
		{gatewaytest.Anthropic, 500, "api_error"},
		{gatewaytest.OpenAI, 429, "rate_limit_exceeded"},
		{gatewaytest.OpenAI, 500, "server_error"},
	}
	for _, tc := range tests {
		t.Run(string(tc.sdk)+"-"+http.StatusText(tc.status), func(t *testing.T) {
			s := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply {
				return scriptedmodel.Reply{Status: tc.status, ErrorMessage: "scripted failure"}
			})
			defer s.Close()
			c := gatewaytest.Call{SDK: tc.sdk, BaseURL: s.URL, APIKey: "k", Kind: "create",
				Body: map[string]any{"model": "m", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}}
			if tc.sdk == gatewaytest.OpenAI {
				c.BaseURL += "/v1"
			}
			o := gatewaytest.RunSDK(t, c)
			if o.OK || o.Status != tc.status {
				t.Fatalf("got ok=%v status %d, want status %d", o.OK, o.Status, tc.status)
			}
			if !bytes.Contains(o.Error, []byte(tc.errType)) || !bytes.Contains(o.Error, []byte("scripted failure")) {
				t.Errorf("got error body %s, want type %s and the message", o.Error, tc.errType)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("got %d requests, want 1 (retries off)", n)
			}
		})
	}
}

func TestStreamErrorEvent(t *testing.T) {
	s := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("partial answer here")}, StreamError: &scriptedmodel.StreamError{After: 3, Type: "overloaded_error", Message: "Overloaded"}}
	})
	defer s.Close()
	code, b := post(t, context.Background(), s.URL+"/v1/messages", `{"model":"m","stream":true}`)
	if code != 200 {
		t.Fatalf("got %d", code)
	}
	err := gatewaytest.CheckAnthropicStream(b)
	if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("got %v, want the error event reported", err)
	}
}

func TestStallAndAbort(t *testing.T) {
	s := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("never finished")}, Stall: true, StallAfter: 2}
	})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages", strings.NewReader(`{"model":"m","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read the two events sent before the stall, then hang up.
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	for bytes.Count(buf, []byte("\n\n")) < 2 {
		n, err := resp.Body.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			t.Fatalf("reading: %v (got %q)", err, buf)
		}
	}
	_, ended := s.Aborted()
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the request end")
	}
	if got, _ := s.Aborted(); len(got) != 1 || got[0] != 1 {
		t.Errorf("got aborted %v, want [1]", got)
	}
}
