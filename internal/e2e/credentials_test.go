package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// TestGatewayKeepsMcproxyCredentials: a model API client proves itself to
// mcproxy with auth_token (as a bearer, or in X-Mcproxy-Token beside its
// provider key) and may hold the dashboard's old cookie; through the real
// binary, none of that reaches the provider, on a projected route, a
// passthrough route or the OpenAI one, while the client's own key and its
// other cookies arrive as they were sent (issue 26).
func TestGatewayKeepsMcproxyCredentials(t *testing.T) {
	const token = "mcp-local-token-26"
	up := scriptedmodel.New(func(r *scriptedmodel.Request) scriptedmodel.Reply {
		if strings.HasSuffix(r.Path, "/models") {
			return scriptedmodel.Reply{Raw: &scriptedmodel.Raw{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"data":[]}`)}}
		}
		return scriptedmodel.Say("hello")
	})
	defer up.Close()
	dir := t.TempDir()
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"auth_token": token,
		"mcpServers": map[string]any{},
		"data_dir":   filepath.Join(dir, "data"),
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL},
			"openai":    map[string]any{"base_url": up.URL}},
	})
	base, p := serveHTTP(t, cfg)

	anthropic := `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	openai := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	// Anthropic clients send their key in x-api-key, so Authorization may
	// carry mcproxy's token; OpenAI clients' Authorization is their key.
	withBearer := http.Header{
		"Authorization":     {"Bearer " + token},
		"X-Mcproxy-Token":   {token},
		"X-Mcproxy-Session": {"conv-26"},
		"X-Api-Key":         {"sk-ant-client"},
		"Anthropic-Version": {"2023-06-01"},
		"Cookie":            {"a=1; mcproxy_token=" + token + "; b=2"},
	}
	lowerCase := http.Header{
		"Authorization": {"bearer  " + token},
		"X-Api-Key":     {"sk-ant-client"},
		"Cookie":        {"mcproxy_token=" + token + ";a=1", "c=3"},
	}
	withKey := http.Header{
		"Authorization":   {"Bearer sk-openai-client"},
		"X-Mcproxy-Token": {token},
		"Cookie":          {"a=1; mcproxy_token=" + token + "; b=2"},
	}
	for _, tc := range []struct {
		name, method, path, body string
		header                   http.Header
		wantAuth, wantKey        string
		wantCookies              []string
	}{
		{"projected messages", http.MethodPost, "/v1/messages", anthropic, withBearer, "", "sk-ant-client", []string{"a=1; b=2"}},
		{"count_tokens", http.MethodPost, "/v1/messages/count_tokens", anthropic, withBearer, "", "sk-ant-client", []string{"a=1; b=2"}},
		{"passthrough models", http.MethodGet, "/v1/models", "", withBearer, "", "sk-ant-client", []string{"a=1; b=2"}},
		{"lower-case bearer, two cookie lines", http.MethodPost, "/v1/messages", anthropic, lowerCase, "", "sk-ant-client", []string{"a=1", "c=3"}},
		{"openai chat", http.MethodPost, "/openai/v1/chat/completions", openai, withKey, "Bearer sk-openai-client", "", []string{"a=1; b=2"}},
		{"openai passthrough models", http.MethodGet, "/openai/v1/models", "", withKey, "Bearer sk-openai-client", "", []string{"a=1; b=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(up.Requests())
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = tc.header.Clone()
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d %s, want 200\n%s", resp.StatusCode, b, p.output())
			}
			reqs := up.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("the provider got %d requests, want 1", len(reqs)-before)
			}
			got := reqs[len(reqs)-1].Header
			for name, vs := range got {
				for _, v := range vs {
					if strings.Contains(v, token) {
						t.Errorf("the provider got mcproxy's token in %s: %q", name, v)
					}
				}
			}
			for _, name := range []string{"X-Mcproxy-Token", "X-Mcproxy-Session"} {
				if _, ok := got[name]; ok {
					t.Errorf("the provider got %s", name)
				}
			}
			if a := got.Get("Authorization"); a != tc.wantAuth {
				t.Errorf("Authorization: got %q, want %q", a, tc.wantAuth)
			}
			if k := got.Get("X-Api-Key"); k != tc.wantKey {
				t.Errorf("x-api-key: got %q, want %q", k, tc.wantKey)
			}
			if c := got.Values("Cookie"); !slices.Equal(c, tc.wantCookies) {
				t.Errorf("Cookie: got %q, want %q", c, tc.wantCookies)
			}
		})
	}
	if strings.Contains(p.output(), token) {
		t.Errorf("mcproxy's token reached its log:\n%s", p.output())
	}
}
