package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// Gateway identities (issue 31), with the official Anthropic SDK against
// a scripted model: a client token is accepted at the gateway, in
// X-Mcproxy-Token (beside the SDK's key in Authorization) or as the bearer
// beside x-api-key (a plain HTTP client), and never reaches the provider,
// while the client's own key does, untouched; a token whose
// profile sets "gateway": false gets 403 naming that setting; an unknown
// one 401; and a profile's gateway_models window paces its clients: a
// conversation past half of the profile's small window is projected
// through noa, the same conversation under auth_token (the model's
// built-in 200K window) goes as it came.
func TestGatewayClientTokens(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	const admin = "gateway-identity-admin"
	model := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("hello from the model") })
	defer model.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, map[string]any{
		"auth_token": admin,
		"data_dir":   dataDir,
		"mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}},
		"profiles": map[string]any{
			"coder": map[string]any{"servers": []string{"obs"}, "gateway_models": map[string]any{"claude-sonnet-4-5": map[string]any{"context_window": 20000}}},
			"desk":  map[string]any{"servers": []string{"obs"}, "gateway": false},
		},
		"gateway": map[string]any{"enabled": true, "summary_round": false, "anthropic": map[string]any{"base_url": model.URL}},
	})
	store, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	coder, _, err := store.Create(context.Background(), "coder-agent", []string{"coder"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	desk, _, err := store.Create(context.Background(), "desk-app", []string{"desk"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-ant-client-key"
	small := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	sdk := func(headers map[string]string, body map[string]any) gatewaytest.Outcome {
		t.Helper()
		return gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: s.base, APIKey: key, Headers: headers, Kind: "create", Body: body})
	}
	// The running process sees tokens created after it started.
	eventually(t, "the new tokens to be accepted", 5*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/models", nil)
		req.Header.Set("X-Mcproxy-Token", coder)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode != http.StatusUnauthorized
	}, s.stderr.String)

	noToken := func(what string) {
		t.Helper()
		for _, r := range model.Requests() {
			for name, vs := range r.Header {
				for _, v := range vs {
					if strings.Contains(v, coder) || strings.Contains(v, desk) {
						t.Errorf("%s: the provider got a client token in %s", what, name)
					}
				}
			}
			if bytes.Contains(r.Body, []byte(coder)) {
				t.Errorf("%s: the provider got a client token in the body", what)
			}
		}
	}
	// The SDK sends its API key as Authorization: Bearer; the client
	// token goes in X-Mcproxy-Token.
	before := len(model.Requests())
	o := sdk(map[string]string{"X-Mcproxy-Token": coder}, small)
	if !o.OK || !strings.Contains(string(o.Result), "hello from the model") {
		t.Fatalf("X-Mcproxy-Token: the SDK got %+v\n%s", o, s.stderr.String())
	}
	reqs := model.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("the provider got %d requests, want 1", len(reqs)-before)
	}
	if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("the provider got Authorization %q, want the client's key as the SDK sent it", got)
	}
	// A client sending its key as x-api-key may send the token as the
	// bearer instead.
	before = len(model.Requests())
	resp, body := gatewaytest.Do(t, context.Background(), http.MethodPost, s.base+"/v1/messages",
		`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		map[string]string{"X-Api-Key": key, "Authorization": "Bearer " + coder, "Content-Type": "application/json", "Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a bearer client token beside x-api-key: %d %s", resp.StatusCode, body)
	}
	reqs = model.Requests()
	if len(reqs) != before+1 {
		t.Fatalf("the provider got %d requests, want 1", len(reqs)-before)
	}
	if h := reqs[len(reqs)-1].Header; h.Get("X-Api-Key") != key || h.Get("Authorization") != "" {
		t.Errorf("the provider got x-api-key %q and Authorization %q, want the client's key alone", h.Get("X-Api-Key"), h.Get("Authorization"))
	}
	noToken("a small request")

	before = len(model.Requests())
	o = sdk(map[string]string{"X-Mcproxy-Token": desk}, small)
	if o.OK || o.Status != http.StatusForbidden || !strings.Contains(o.Message, "profiles.desk.gateway") {
		t.Errorf("a token of a profile with \"gateway\": false: got %+v, want 403 naming profiles.desk.gateway", o)
	}
	o = sdk(map[string]string{"X-Mcproxy-Token": clienttoken.Prefix + "forged"}, small)
	if o.OK || o.Status != http.StatusUnauthorized {
		t.Errorf("an unknown client token: got %+v, want 401", o)
	}
	if n := len(model.Requests()) - before; n != 0 {
		t.Errorf("refused requests reached the provider %d times", n)
	}

	// About 16K tokens of conversation: past half of coder's 20K window,
	// under the 40K and 100K the gateway's default engages at for 200K.
	long := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []any{
		map[string]any{"role": "user", "content": strings.Repeat(" hello", 16000)},
	}}
	forwarded := func(label string, headers map[string]string) []byte {
		t.Helper()
		before := len(model.Requests())
		if o := sdk(headers, long); !o.OK {
			t.Fatalf("%s: the long request: %+v", label, o)
		}
		reqs := model.Requests()
		if len(reqs) == before {
			t.Fatalf("%s: the long request did not reach the provider", label)
		}
		return reqs[len(reqs)-1].Body
	}
	coderBody := forwarded("coder", map[string]string{"X-Mcproxy-Token": coder})
	adminBody := forwarded("admin", map[string]string{"X-Mcproxy-Token": admin})
	if bytes.Contains(adminBody, []byte(`"Compress"`)) {
		t.Errorf("under auth_token (a 200K window) the long conversation was projected through noa; want it forwarded as it came")
	}
	if !bytes.Contains(coderBody, []byte(`"Compress"`)) {
		t.Errorf("under coder's 20K window the long conversation was not projected through noa (no Compress tool offered); its gateway_models window was not applied")
	}
	noToken("the long requests")
	if strings.Contains(s.stderr.String(), coder) || strings.Contains(s.stderr.String(), desk) {
		t.Error("a client token's value is in the log")
	}
}

// The gateway refuses a client token in the provider's own error shape
// (issue 31), so the official Anthropic and OpenAI SDKs raise their typed
// errors (AuthenticationError for 401, PermissionDeniedError for 403)
// carrying mcproxy's message, which says how to correct the call.
func TestGatewayRefusalsInProviderFormat(t *testing.T) {
	t.Parallel()
	gatewaytest.RequireSDKs(t)
	model := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("unreached") })
	defer model.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, map[string]any{
		"auth_token": "gateway-refusal-admin",
		"data_dir":   dataDir,
		"mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}},
		"profiles":   map[string]any{"desk": map[string]any{"servers": []string{"obs"}, "gateway": false}},
		"gateway": map[string]any{"enabled": true, "summary_round": false,
			"anthropic": map[string]any{"base_url": model.URL}, "openai": map[string]any{"base_url": model.URL}},
	})
	store, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	desk, _, err := store.Create(context.Background(), "desk-app", []string{"desk"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new token to be known", 5*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/v1/models", nil)
		req.Header.Set("X-Mcproxy-Token", desk)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusForbidden
	}, s.stderr.String)

	anthropicBody := map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	openaiBody := map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	for _, tc := range []struct {
		name           string
		sdk            gatewaytest.SDK
		base           string
		body           map[string]any
		token          string
		status         int
		class, errType string
		message        string
	}{
		{"anthropic unknown token", gatewaytest.Anthropic, s.base, anthropicBody, clienttoken.Prefix + "forged", 401, "AuthenticationError", "authentication_error", "unknown or revoked client token"},
		{"anthropic gateway off", gatewaytest.Anthropic, s.base, anthropicBody, desk, 403, "PermissionDeniedError", "permission_error", "profiles.desk.gateway"},
		{"openai unknown token", gatewaytest.OpenAI, s.base + "/openai/v1", openaiBody, clienttoken.Prefix + "forged", 401, "AuthenticationError", "invalid_request_error", "unknown or revoked client token"},
		{"openai gateway off", gatewaytest.OpenAI, s.base + "/openai/v1", openaiBody, desk, 403, "PermissionDeniedError", "invalid_request_error", "profiles.desk.gateway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: tc.sdk, BaseURL: tc.base, APIKey: "sk-client-key",
				Headers: map[string]string{"X-Mcproxy-Token": tc.token}, Kind: "create", Body: tc.body})
			if o.OK || o.Status != tc.status || o.Name != tc.class {
				t.Fatalf("got ok=%v status %d class %q, want %d %s", o.OK, o.Status, o.Name, tc.status, tc.class)
			}
			// The Anthropic SDK keeps the whole body, OpenAI's its "error".
			var shape struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
				Message string `json:"message"`
				Code    string `json:"code"`
			}
			if err := json.Unmarshal(o.Error, &shape); err != nil {
				t.Fatalf("the SDK's error body %s is not the provider's JSON: %v", o.Error, err)
			}
			typ, msg := shape.Type, shape.Message
			if tc.sdk == gatewaytest.Anthropic {
				if shape.Type != "error" {
					t.Errorf("Anthropic body type %q, want \"error\"", shape.Type)
				}
				typ, msg = shape.Error.Type, shape.Error.Message
			} else if shape.Code == "" {
				t.Errorf("OpenAI error %s has no code", o.Error)
			}
			if typ != tc.errType || !strings.Contains(msg, tc.message) || !strings.Contains(o.Message, tc.message) {
				t.Errorf("error type %q message %q (the SDK's: %q), want type %s and a message naming %q", typ, msg, o.Message, tc.errType, tc.message)
			}
		})
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("refused requests reached the provider %d times", n)
	}
}

// A profile's gateway_models follow a config reload (issue 31): a
// conversation of its token that the profile's big window lets through
// as it came is projected through noa once a reload has shrunk the
// window, without a restart.
func TestGatewayProfileWindowFollowsReload(t *testing.T) {
	t.Parallel()
	model := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("hello from the model") })
	defer model.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	window := func(n int) map[string]any {
		return map[string]any{"coder": map[string]any{"servers": []string{"obs"}, "gateway_models": map[string]any{"claude-sonnet-4-5": map[string]any{"context_window": n}}}}
	}
	cfg := map[string]any{
		"auth_token": "gateway-reload-admin",
		"data_dir":   dataDir,
		"mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}},
		"profiles":   window(1000000),
		"gateway":    map[string]any{"enabled": true, "summary_round": false, "anthropic": map[string]any{"base_url": model.URL}},
	}
	s := startServe(t, cfg)
	store, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	coder, _, err := store.Create(context.Background(), "coder-agent", []string{"coder"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// About 16K tokens of conversation, each time a new one.
	send := func(word string) []byte {
		t.Helper()
		var status int
		eventually(t, "the gateway to take the token", 5*time.Second, func() bool {
			resp, body := gatewaytest.Do(t, context.Background(), http.MethodPost, s.base+"/v1/messages",
				`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"`+strings.Repeat(" "+word, 16000)+`"}]}`,
				map[string]string{"X-Api-Key": "sk-ant-client-key", "X-Mcproxy-Token": coder, "Content-Type": "application/json", "Anthropic-Version": "2023-06-01"})
			status = resp.StatusCode
			return status != http.StatusUnauthorized || strings.Contains(string(body), "expired")
		}, s.stderr.String)
		if status != http.StatusOK {
			t.Fatalf("the long request: %d\n%s", status, s.stderr.String())
		}
		reqs := model.Requests()
		return reqs[len(reqs)-1].Body
	}
	if body := send("hello"); bytes.Contains(body, []byte(`"Compress"`)) {
		t.Fatalf("under a 1M window the conversation was projected through noa; want it forwarded as it came")
	}
	cfg["profiles"] = window(20000)
	writeJSON(t, s.config, cfg)
	eventually(t, "the reload", 10*time.Second, func() bool { return strings.Contains(s.stderr.String(), "config reloaded") }, s.stderr.String)
	if body := send("world"); !bytes.Contains(body, []byte(`"Compress"`)) {
		t.Errorf("after the reload to a 20K window the conversation was not projected through noa (no Compress tool offered): the reloaded gateway_models were not applied")
	}
}
