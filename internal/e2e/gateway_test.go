package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// TestGatewayBinary serves the model APIs from the real binary, beside
// /mcp on the same listener, and drives them with the official SDKs against
// a scripted model upstream.
func TestGatewayBinary(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	up := scriptedmodel.New(func(r *scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Say("hello from the scripted model")
	})
	defer up.Close()
	dir := t.TempDir()
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{},
		"data_dir":   filepath.Join(dir, "data"),
		"gateway": map[string]any{"enabled": true,
			"anthropic": map[string]any{"base_url": up.URL},
			"openai":    map[string]any{"base_url": up.URL, "prefix": "/oai"}},
	})
	base, p := serveHTTP(t, cfg)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, c := range []gatewaytest.Call{
		{SDK: gatewaytest.Anthropic, BaseURL: base, APIKey: "sk-a", Kind: "stream", Body: map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": msgs}},
		{SDK: gatewaytest.OpenAI, BaseURL: base + "/oai/v1", APIKey: "sk-o", Kind: "create", Body: map[string]any{"model": "gpt-4o", "messages": msgs}},
	} {
		o := gatewaytest.RunSDK(t, c)
		if !o.OK || !strings.Contains(string(o.Result), "hello from the scripted model") {
			t.Errorf("%s %s: got ok=%v %s %s\n%s", c.SDK, c.Kind, o.OK, o.Message, o.Result, p.output())
		}
	}
	if n := len(up.Requests()); n != 2 {
		t.Errorf("upstream got %d requests, want 2", n)
	}
	if strings.Contains(p.output(), "sk-a") || strings.Contains(p.output(), "sk-o") {
		t.Errorf("a client key reached mcproxy's log:\n%s", p.output())
	}
}
