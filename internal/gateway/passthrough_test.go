package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

func projectOff(o *Options) { off := false; o.Config.Project = &off }

func weatherReply(*scriptedmodel.Request) scriptedmodel.Reply {
	return scriptedmodel.Reply{Parts: []scriptedmodel.Part{
		scriptedmodel.Thinking("The user wants the weather.", "sig-9"),
		scriptedmodel.Text("Let me look that up."),
		scriptedmodel.ToolCall("toolu_w", "get_weather", `{"city":"Oslo"}`),
	}, Usage: scriptedmodel.Usage{InputTokens: 31, OutputTokens: 12}}
}

// TestPassthroughSDKs drives both official SDKs through the gateway,
// streaming and not, and checks what each SDK assembled.
func TestPassthroughSDKs(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	r := newRig(t, weatherReply, projectOff)
	anthropicBody := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 64,
		"messages": []any{map[string]any{"role": "user", "content": "Weather in Oslo?"}}}
	openaiBody := map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "Weather in Oslo?"}},
		"stream_options": map[string]any{"include_usage": true}}
	for _, tc := range []struct {
		sdk  gatewaytest.SDK
		kind string
	}{{gatewaytest.Anthropic, "create"}, {gatewaytest.Anthropic, "stream"}, {gatewaytest.OpenAI, "create"}, {gatewaytest.OpenAI, "stream"}} {
		t.Run(string(tc.sdk)+"-"+tc.kind, func(t *testing.T) {
			c := gatewaytest.Call{SDK: tc.sdk, BaseURL: r.url, APIKey: "sk-client-key", Kind: tc.kind, Body: anthropicBody}
			if tc.sdk == gatewaytest.OpenAI {
				c.BaseURL, c.Body = r.url+"/openai/v1", openaiBody
				if tc.kind == "create" {
					c.Body = map[string]any{"model": "gpt-4o", "messages": openaiBody["messages"]}
				}
			}
			o := gatewaytest.RunSDK(t, c)
			if !o.OK {
				t.Fatalf("SDK failed: %s %d %s", o.Name, o.Status, o.Message)
			}
			res := string(o.Result)
			for _, want := range []string{"Let me look that up.", "get_weather", `Oslo`} {
				if !strings.Contains(res, want) {
					t.Errorf("SDK result %s lacks %q", res, want)
				}
			}
			if tc.sdk == gatewaytest.Anthropic && !strings.Contains(res, `"signature":"sig-9"`) {
				t.Errorf("SDK result %s lacks the thinking block's signature", res)
			}
			if tc.sdk == gatewaytest.OpenAI && !strings.Contains(res, `"prompt_tokens":31`) {
				t.Errorf("SDK result %s lacks the usage", res)
			}
		})
	}
	for _, req := range r.up.Requests() {
		if req.Header.Get("Authorization") != "Bearer sk-client-key" {
			t.Errorf("request %d %s: the client's key did not arrive (Authorization %q)", req.Seq, req.Path, req.Header.Get("Authorization"))
		}
	}
}

// TestPassthroughBytes checks that body, path, query and the client's
// headers arrive as sent, that mcproxy's own headers do not, and that the
// streams the client receives are valid to the byte.
func TestPassthroughBytes(t *testing.T) {
	r := newRig(t, weatherReply, projectOff)
	body := `{"model":"claude-opus-4-1", "stream": true ,"max_tokens":9,"messages":[{"role":"user","content":"hé"}],"unknown_field":{"x":[1,2]}}`
	hdr := map[string]string{"x-api-key": "sk-ant-secret", "anthropic-version": "2023-06-01", "anthropic-beta": "context-management-2025-06-27",
		"X-Custom": "kept", HeaderSession: "conv-1", "Content-Type": "application/json"}
	resp, got := r.do(t, context.Background(), http.MethodPost, "/v1/messages?beta=true", body, hdr)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("got %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := gatewaytest.CheckAnthropicStream(got); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, got)
	}
	reqs := r.up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(reqs))
	}
	up := reqs[0]
	if string(up.Body) != body || up.Path != "/v1/messages" || up.RawQuery != "beta=true" {
		t.Errorf("upstream got %s %s?%s, want the body, path and query as sent", up.Body, up.Path, up.RawQuery)
	}
	for k, v := range hdr {
		got := up.Header.Get(k)
		if k == HeaderSession {
			if got != "" {
				t.Errorf("%s was forwarded", k)
			}
			continue
		}
		if got != v {
			t.Errorf("header %s: upstream got %q, want %q", k, got, v)
		}
	}

	resp, got = r.do(t, context.Background(), http.MethodPost, "/openai/v1/chat/completions",
		`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, map[string]string{"Authorization": "Bearer sk-openai"})
	if resp.StatusCode != 200 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if err := gatewaytest.CheckOpenAIStream(got); err != nil {
		t.Fatalf("stream invalid: %v\n%s", err, got)
	}
	if last := r.up.Requests()[1]; last.Path != "/v1/chat/completions" || last.Header.Get("Authorization") != "Bearer sk-openai" {
		t.Errorf("upstream got %s with Authorization %q", last.Path, last.Header.Get("Authorization"))
	}
}

// TestPassthroughOtherPaths: everything else under /v1/ and <prefix>/v1/
// goes upstream untouched, in any method.
func TestPassthroughOtherPaths(t *testing.T) {
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		if req.Path == "/v1/messages/count_tokens" {
			return scriptedmodel.Reply{}
		}
		return scriptedmodel.Reply{Raw: &scriptedmodel.Raw{Status: 200, Header: http.Header{"X-Upstream": {"yes"}},
			Body: []byte(`{"method":"` + req.Method + `","path":"` + req.Path + `"}`)}}
	})
	tests := []struct {
		method, path, wantPath string
	}{
		{http.MethodGet, "/v1/models", "/v1/models"},
		{http.MethodGet, "/v1/models/claude-sonnet-4-5", "/v1/models/claude-sonnet-4-5"},
		{http.MethodPost, "/v1/messages/batches", "/v1/messages/batches"},
		{http.MethodDelete, "/v1/files/file_1", "/v1/files/file_1"},
		{http.MethodGet, "/openai/v1/models", "/v1/models"},
		{http.MethodPost, "/openai/v1/embeddings", "/v1/embeddings"},
	}
	for _, tc := range tests {
		resp, b := r.do(t, context.Background(), tc.method, tc.path, `{}`, nil)
		want := `{"method":"` + tc.method + `","path":"` + tc.wantPath + `"}`
		if resp.StatusCode != 200 || string(b) != want || resp.Header.Get("X-Upstream") != "yes" {
			t.Errorf("%s %s: got %d %s, want 200 %s with the upstream's header", tc.method, tc.path, resp.StatusCode, b, want)
		}
	}
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"count me"}]}`, nil)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"input_tokens"`)) {
		t.Errorf("count_tokens: got %d %s", resp.StatusCode, b)
	}
	for _, path := range []string{"/v2/messages", "/openai/v2/chat", "/other"} {
		resp, b := r.do(t, context.Background(), http.MethodGet, path, "", nil)
		if resp.StatusCode != 404 || !bytes.Contains(b, []byte("not_found_error")) {
			t.Errorf("%s: got %d %s, want a provider-style 404", path, resp.StatusCode, b)
		}
	}
	if n := len(r.up.Requests()); n != len(tests)+1 {
		t.Errorf("upstream got %d requests, want %d (unknown paths stay local)", n, len(tests)+1)
	}
}

// TestUpstreamErrorsUnchanged: the provider's status and body reach the
// client as they were, through the SDKs too.
func TestUpstreamErrorsUnchanged(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	for _, status := range []int{429, 529, 500, 400} {
		for _, path := range []string{"/v1/messages", "/openai/v1/chat/completions"} {
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply {
				return scriptedmodel.Reply{Status: status, ErrorMessage: "scripted " + http.StatusText(status)}
			})
			upPath := strings.TrimPrefix(path, "/openai")
			direct, err := http.Post(r.up.URL+upPath, "application/json", strings.NewReader(`{"model":"m"}`))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			_, _ = want.ReadFrom(direct.Body)
			direct.Body.Close()
			resp, got := r.do(t, context.Background(), http.MethodPost, path, `{"model":"m"}`, nil)
			if resp.StatusCode != status || !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%s %d: got %d %s, want %d %s", path, status, resp.StatusCode, got, status, want.Bytes())
			}
		}
	}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Status: 529, ErrorMessage: "Overloaded"}
	})
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "stream",
		Body: map[string]any{"model": "m", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}})
	if o.OK || o.Status != 529 || !bytes.Contains(o.Error, []byte("overloaded_error")) {
		t.Errorf("SDK got ok=%v status %d error %s, want 529 overloaded_error", o.OK, o.Status, o.Error)
	}
}

// TestClientDisconnectCancelsUpstream: a client hanging up mid-stream ends
// the upstream request.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		stallAfter       int
	}{
		{"anthropic", "/v1/messages", `{"model":"m","stream":true}`, 1},
		{"openai", "/openai/v1/chat/completions", `{"model":"m","stream":true}`, 1},
		{"anthropic-json", "/v1/messages", `{"model":"m"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply {
				return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("a long answer that never ends")}, Stall: true, StallAfter: tc.stallAfter}
			}, projectOff)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+tc.path, strings.NewReader(tc.body))
			_, ended := r.up.Aborted()
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				buf := make([]byte, 1024)
				if strings.Contains(tc.body, "stream") {
					_, _ = resp.Body.Read(buf) // the first event arrived; now hang up
				}
				cancel()
			}()
			if !strings.Contains(tc.body, "stream") {
				// The JSON answer stalls before its headers: hang up once the
				// upstream has the request.
				deadline := time.Now().Add(10 * time.Second)
				for len(r.up.Requests()) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				cancel()
			}
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the upstream request was not cancelled")
			}
			<-done
		})
	}
}

// TestUnreachableUpstream: a provider-style 502, and no secret in the logs.
func TestUnreachableUpstream(t *testing.T) {
	r := newRig(t, weatherReply, func(o *Options) {
		o.Config.Anthropic.BaseURL = "http://127.0.0.1:1"
		o.Config.OpenAI.BaseURL = "http://127.0.0.1:1"
	})
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", `{"model":"m"}`, map[string]string{"x-api-key": "sk-ant-topsecret"})
	var e struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != 502 || e.Type != "error" || e.Error.Type != "api_error" ||
		!strings.Contains(e.Error.Message, "could not be reached") {
		t.Errorf("got %d %s, want a 502 in Anthropic's error shape", resp.StatusCode, b)
	}
	resp, b = r.do(t, context.Background(), http.MethodGet, "/openai/v1/models", "", map[string]string{"Authorization": "Bearer sk-oa-topsecret"})
	if resp.StatusCode != 502 || !bytes.Contains(b, []byte(`"server_error"`)) {
		t.Errorf("got %d %s, want a 502 in OpenAI's error shape", resp.StatusCode, b)
	}
	if r.logs.Len() == 0 {
		t.Fatal("nothing logged for an unreachable upstream")
	}
	r.assertNotLogged(t, "topsecret")
}

// TestGuardApplies: the gateway sits behind the same Host/Origin guard.
func TestGuardApplies(t *testing.T) {
	r := newRig(t, weatherReply)
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}} {
		resp, _ := r.do(t, context.Background(), http.MethodPost, "/v1/messages", `{}`, h)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("headers %v: got %d, want 403", h, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/messages", strings.NewReader(`{}`))
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: got %d, want 403", resp.StatusCode)
	}
	if n := len(r.up.Requests()); n != 0 {
		t.Errorf("upstream got %d requests, want none", n)
	}
}

// TestAuthTokenBesideProviderKey: with mcproxy's auth_token set, a client
// whose Authorization carries its provider key proves itself with
// X-Mcproxy-Token; neither mcproxy's token nor its header reach the
// provider.
func TestAuthTokenBesideProviderKey(t *testing.T) {
	r := newRig(t, weatherReply, projectOff, func(o *Options) { o.AuthToken = "mcp-local-token" })
	body := `{"model":"m","max_tokens":5,"messages":[]}`
	tests := []struct {
		name     string
		header   map[string]string
		status   int
		wantAuth string // Authorization the upstream sees
	}{
		{"no token", map[string]string{"Authorization": "Bearer sk-provider"}, 401, ""},
		{"token header", map[string]string{"Authorization": "Bearer sk-provider", authheader.Token: "mcp-local-token"}, 200, "Bearer sk-provider"},
		{"token as bearer", map[string]string{"Authorization": "Bearer mcp-local-token", "x-api-key": "sk-provider"}, 200, ""},
		{"wrong token header", map[string]string{"Authorization": "Bearer mcp-local-token", authheader.Token: "nope"}, 401, ""},
	}
	for _, tc := range tests {
		before := len(r.up.Requests())
		resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", body, tc.header)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: got %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
			continue
		}
		reqs := r.up.Requests()
		if tc.status != 200 {
			if len(reqs) != before {
				t.Errorf("%s: refused, yet forwarded", tc.name)
			}
			continue
		}
		up := reqs[len(reqs)-1]
		if got := up.Header.Get("Authorization"); got != tc.wantAuth {
			t.Errorf("%s: upstream Authorization %q, want %q", tc.name, got, tc.wantAuth)
		}
		if up.Header.Get(authheader.Token) != "" {
			t.Errorf("%s: %s reached the upstream", tc.name, authheader.Token)
		}
	}
}
