package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// rig is a gateway behind mcproxy's HTTP guard, in front of a scripted
// model upstream.
type rig struct {
	up   *scriptedmodel.Server
	gw   *Gateway
	url  string // the gateway's base: http://127.0.0.1:N
	logs *observer.ObservedLogs
}

type rigOption func(*Options)

func newRig(t *testing.T, script scriptedmodel.Script, opts ...rigOption) *rig {
	t.Helper()
	up := scriptedmodel.New(script)
	t.Cleanup(up.Close)
	core, logs := observer.New(zapcore.DebugLevel)
	o := Options{
		Config: config.GatewayConfig{Enabled: true,
			Anthropic: config.GatewayProvider{BaseURL: up.URL},
			OpenAI:    config.GatewayProvider{BaseURL: up.URL}},
		Logger: zap.New(core),
	}
	for _, f := range opts {
		f(&o)
	}
	gw, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mcptransport.Guard(gw, mcptransport.HTTPOptions{AuthToken: o.AuthToken}))
	t.Cleanup(srv.Close)
	return &rig{up: up, gw: gw, url: srv.URL, logs: logs}
}

// do sends a request to the gateway and returns the answer, read whole.
func (r *rig) do(t *testing.T, ctx context.Context, method, path, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	return gatewaytest.Do(t, ctx, method, r.url+path, body, header)
}

// assertNotLogged fails if any log entry (message or field) contains s.
func (r *rig) assertNotLogged(t *testing.T, s string) {
	t.Helper()
	for _, e := range r.logs.All() {
		if strings.Contains(e.Message, s) {
			t.Errorf("log %q contains a secret", e.Message)
		}
		for k, v := range e.ContextMap() {
			if strings.Contains(strings.ToLower(toString(v)), strings.ToLower(s)) {
				t.Errorf("log %q field %s contains a secret", e.Message, k)
			}
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if e, ok := v.(error); ok {
		return e.Error()
	}
	return ""
}
