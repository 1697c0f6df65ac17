package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

const obsToken = "obs-token-0123456789abcdef"

// newObservedUpstream is a Go upstream "obs" with echo (succeeds) and
// fail (a tool error), and a config over it with auth_token set.
func newObservedUpstream(t *testing.T, extra map[string]any) (string, string) {
	t.Helper()
	up := newGoUpstream(t, "obs")
	up.mcp.AddTool(mcp.NewTool("fail", mcp.WithDescription("Fail on purpose."), mcp.WithString("why")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("failed on purpose: " + req.GetString("why", "")), nil
		})
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{"obs": map[string]any{"url": up.url()}},
		"data_dir":   filepath.Join(dir, "data"),
		"log_level":  "debug",
		"auth_token": obsToken,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfigFile(t, filepath.Join(dir, "config.json"), cfg), dir
}

// get fetches base+path, with mcproxy's token when token is set.
func get(t *testing.T, base, path string, token bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+obsToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// connectObserved opens an MCP session with the token, as client name.
func connectObserved(t *testing.T, base, name string) *client.Client {
	t.Helper()
	c := startHTTP(t, base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + obsToken}))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// sample finds the value of the series of family name whose labels include
// want; ok is false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f := fams[name]
	if f == nil {
		return nil, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

// scrapeMetrics reads base's /metrics with the Prometheus text parser.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base, "/metrics", true)
	if code != http.StatusOK {
		t.Fatalf("/metrics: got %d %s", code, body)
	}
	parser := expfmt.NewTextParser(prommodel.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// TestMetricsCountCalls runs one call that succeeds, one that fails and two
// that call_tool refuses (an unknown tool, arguments not an object) through
// the binary, then scrapes /metrics with the Prometheus text parser: the
// counts by server, tool and outcome (the unknown tool under "(unknown)"),
// the latency histogram and the upstream's state match. /metrics wants auth_token like /status; /healthz
// and /readyz answer without it.
func TestMetricsCountCalls(t *testing.T) {
	t.Parallel()
	config, _ := newObservedUpstream(t, nil)
	base, _ := serveHTTP(t, config)

	if code, body := get(t, base, "/healthz", false); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: got %d %q, want 200 \"ok\"", code, body)
	}
	waitFor(t, 60*time.Second, "/readyz to answer 200", func() bool {
		code, _ := get(t, base, "/readyz", false)
		return code == http.StatusOK
	})
	if _, body := get(t, base, "/readyz", false); body != "ready: 1 of 1 servers ready\n" {
		t.Errorf("/readyz: got %q, want \"ready: 1 of 1 servers ready\"", body)
	}
	if code, _ := get(t, base, "/metrics", false); code != http.StatusUnauthorized {
		t.Errorf("/metrics without auth_token: got %d, want 401", code)
	}

	c := connectObserved(t, base, "metrics-client")
	if res := callTool(t, c, "call_tool", map[string]any{"name": "obs:echo", "arguments": map[string]any{"message": "hi"}}); res.IsError {
		t.Fatalf("obs:echo: got a tool error %q", text(res))
	}
	if res := callTool(t, c, "call_tool", map[string]any{"name": "obs:fail", "arguments": map[string]any{"why": "test"}}); !res.IsError {
		t.Fatalf("obs:fail: got %q, want a tool error", text(res))
	}
	// Refused before the upstream: a tool nobody has, arguments that are
	// not an object.
	for _, args := range []map[string]any{
		{"name": "obs:no_such_tool", "arguments": map[string]any{}},
		{"name": "obs:echo", "arguments": []any{"hi"}},
	} {
		if res := callTool(t, c, "call_tool", args); !res.IsError {
			t.Fatalf("call_tool %v: got %q, want a tool error", args, text(res))
		}
	}

	fams := scrapeMetrics(t, base)
	for _, tc := range []struct {
		server, tool, outcome string
		want                  float64
	}{
		{"obs", "echo", "ok", 1}, {"obs", "fail", "error", 1}, {"obs", "echo", "error", 1}, {"obs", "fail", "ok", 0},
		{"(unknown)", "(unknown)", "error", 1}, {"obs", "no_such_tool", "error", 0},
	} {
		m, ok := sample(fams, "mcproxy_tool_calls_total", map[string]string{"server": tc.server, "tool": tc.tool, "outcome": tc.outcome})
		got := 0.0
		if ok {
			got = m.GetCounter().GetValue()
		}
		if got != tc.want {
			t.Errorf("mcproxy_tool_calls_total{%s,%s,%s}: got %v, want %v", tc.server, tc.tool, tc.outcome, got, tc.want)
		}
	}
	for tool, n := range map[string]uint64{"echo": 2, "fail": 1} {
		m, ok := sample(fams, "mcproxy_tool_call_duration_seconds", map[string]string{"server": "obs", "tool": tool})
		if !ok || m.GetHistogram().GetSampleCount() != n || m.GetHistogram().GetSampleSum() <= 0 {
			t.Errorf("mcproxy_tool_call_duration_seconds{obs,%s}: got %v, want %d observations", tool, m, n)
		}
	}
	if m, ok := sample(fams, "mcproxy_upstream_state", map[string]string{"server": "obs", "state": "ready"}); !ok || m.GetGauge().GetValue() != 1 {
		t.Errorf("mcproxy_upstream_state{obs,ready}: got %v, want 1", m)
	}
	if m, ok := sample(fams, "mcproxy_upstream_state", map[string]string{"server": "obs", "state": "down"}); !ok || m.GetGauge().GetValue() != 0 {
		t.Errorf("mcproxy_upstream_state{obs,down}: got %v, want 0", m)
	}
}

// TestActivityHistory runs calls through the binary, one failing and one
// with a token in its arguments, stops mcproxy (Close flushes the history)
// and reads the history back with `mcproxy activity`: newest first, with the
// client's name and session, each filter keeping what it should, and the
// token masked in the file as transcripts mask it.
func TestActivityHistory(t *testing.T) {
	t.Parallel()
	config, dir := newObservedUpstream(t, nil)
	base, p := serveHTTP(t, config)
	c := connectObserved(t, base, "activity-client")
	session := c.GetSessionId()
	secret := "ghp_" + strings.Repeat("a1B2", 9)
	if res := callTool(t, c, "call_tool", map[string]any{"name": "obs:echo", "arguments": map[string]any{"message": "token " + secret}}); res.IsError {
		t.Fatalf("obs:echo: got a tool error %q", text(res))
	}
	if res := callTool(t, c, "call_tool", map[string]any{"name": "obs:fail", "arguments": map[string]any{"why": "on purpose"}}); !res.IsError {
		t.Fatalf("obs:fail: got %q, want a tool error", text(res))
	}
	p.stop(t)

	raw, err := os.ReadFile(filepath.Join(dir, "data", "activity.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Errorf("the history file holds the token unmasked:\n%s", raw)
	}

	read := func(args ...string) []map[string]any {
		t.Helper()
		code, out, errOut := runBinary(t, 30*time.Second, append([]string{"activity", "--config", config, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("mcproxy activity %v: exit %d\n%s", args, code, errOut)
		}
		var list []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("mcproxy activity --json: line %q: %v", line, err)
			}
			list = append(list, e)
		}
		return list
	}
	tools := func(list []map[string]any) string {
		var names []string
		for _, e := range list {
			names = append(names, fmt.Sprint(e["server"], ":", e["tool"]))
		}
		return strings.Join(names, " ")
	}
	all := read()
	if got := tools(all); got != "obs:fail obs:echo" {
		t.Fatalf("mcproxy activity: got %q, want \"obs:fail obs:echo\" (newest first)", got)
	}
	for _, e := range all {
		if e["client"] != "activity-client" || e["session"] != session {
			t.Errorf("entry %v: got client %v session %v, want activity-client %s", e["tool"], e["client"], e["session"], session)
		}
		if ms, _ := e["duration_ms"].(float64); ms <= 0 {
			t.Errorf("entry %v: got duration_ms %v, want > 0", e["tool"], e["duration_ms"])
		}
	}
	if got, _ := all[0]["error"].(string); !strings.Contains(got, "failed on purpose: on purpose") {
		t.Errorf("the failed call's error: got %q, want the tool's error text", got)
	}
	if _, ok := all[1]["error"]; ok {
		t.Errorf("the call that succeeded has an error: %v", all[1]["error"])
	}
	if args, _ := all[1]["arguments"].(string); strings.Contains(args, secret) || !strings.Contains(args, "token ") {
		t.Errorf("the echo call's arguments: got %q, want them with the token masked", args)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--errors"}, "obs:fail"},
		{[]string{"--tool", "obs:echo"}, "obs:echo"},
		{[]string{"--tool", "fail"}, "obs:fail"},
		{[]string{"--server", "other"}, ""},
		{[]string{"--session", session}, "obs:fail obs:echo"},
		{[]string{"--session", "nobody"}, ""},
	} {
		if got := tools(read(tc.args...)); got != tc.want {
			t.Errorf("mcproxy activity %v: got %q, want %q", tc.args, got, tc.want)
		}
	}
	code, out, _ := runBinary(t, 30*time.Second, "activity", "--config", config)
	if code != 0 || !strings.Contains(out, "activity-client") || !strings.Contains(out, "obs:fail") || !strings.Contains(out, "error: failed on purpose") {
		t.Errorf("mcproxy activity: exit %d, got\n%s\nwant a table with the client and the failed call", code, out)
	}
}

// otlpCollector is an in-process OTLP/HTTP collector: it keeps every span
// posted to /v1/traces.
type otlpCollector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *otlpCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	b, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// TestTracesExported sends a call that succeeds and one that fails through
// the binary with tracing.endpoint set to an in-process OTLP collector;
// stopping mcproxy exports what is queued, and the collector holds one span
// per call, named and timed after it, the failed one with an error status.
func TestTracesExported(t *testing.T) {
	t.Parallel()
	col := &otlpCollector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	config, _ := newObservedUpstream(t, map[string]any{"tracing": map[string]any{"endpoint": srv.URL}})
	base, p := serveHTTP(t, config)
	c := connectObserved(t, base, "traced-client")
	session := c.GetSessionId()
	callTool(t, c, "call_tool", map[string]any{"name": "obs:echo", "arguments": map[string]any{"message": "hi"}})
	callTool(t, c, "call_tool", map[string]any{"name": "obs:fail", "arguments": map[string]any{"why": "traced"}})
	p.stop(t)

	col.mu.Lock()
	defer col.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range col.spans {
		byName[s.GetName()] = s
	}
	if len(col.spans) != 2 || byName["tools/call obs:echo"] == nil || byName["tools/call obs:fail"] == nil {
		var names []string
		for _, s := range col.spans {
			names = append(names, s.GetName())
		}
		t.Fatalf("the collector got spans %q, want one each for tools/call obs:echo and obs:fail\n%s", names, p.output())
	}
	for name, s := range byName {
		attrs := map[string]string{}
		for _, kv := range s.GetAttributes() {
			attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		if attrs["mcproxy.server"] != "obs" || attrs["mcp.session.id"] != session || attrs["mcproxy.client.name"] != "traced-client" || attrs["mcp.method.name"] != "tools/call" {
			t.Errorf("%s: got attributes %v, want server obs, session %s, client traced-client", name, attrs, session)
		}
		if s.GetEndTimeUnixNano() <= s.GetStartTimeUnixNano() {
			t.Errorf("%s: ends at %d, not after its start %d", name, s.GetEndTimeUnixNano(), s.GetStartTimeUnixNano())
		}
	}
	if st := byName["tools/call obs:fail"].GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || !strings.Contains(st.GetMessage(), "failed on purpose: traced") {
		t.Errorf("the failed call's span status: got %v, want an error with the tool's text", st)
	}
	if st := byName["tools/call obs:echo"].GetStatus(); st.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the echo call's span status: got %v, want no error", st)
	}
}

// TestMetricsCountGatewayRequests sends one model request through the
// binary's gateway to a scripted model that reports usage with cache
// reads: /metrics, parsed with the Prometheus text parser, counts it with
// the same tokens /status shows.
func TestMetricsCountGatewayRequests(t *testing.T) {
	t.Parallel()
	model := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply {
		r := scriptedmodel.Say("hello from the scripted model")
		r.Usage = scriptedmodel.Usage{InputTokens: 100, CacheRead: 300, OutputTokens: 5}
		return r
	})
	defer model.Close()
	config, _ := newObservedUpstream(t, map[string]any{
		"gateway": map[string]any{"enabled": true, "anthropic": map[string]any{"base_url": model.URL}},
	})
	base, _ := serveHTTP(t, config)

	body := `{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "say hello"}]}`
	resp, answer := gatewaytest.Do(t, context.Background(), http.MethodPost, base+"/v1/messages", body, map[string]string{
		"Content-Type": "application/json", "X-Api-Key": "sk-ant-test-key", "Anthropic-Version": "2023-06-01", "X-Mcproxy-Token": obsToken})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "hello from the scripted model") {
		t.Fatalf("the gateway request: got %d %s", resp.StatusCode, answer)
	}

	var st struct {
		Gateway struct {
			ClientTokens    float64 `json:"client_tokens"`
			ForwardedTokens float64 `json:"forwarded_tokens"`
		} `json:"gateway"`
	}
	if _, b := get(t, base, "/status", true); json.Unmarshal([]byte(b), &st) != nil || st.Gateway.ClientTokens <= 0 {
		t.Fatalf("/status: got %s, want the gateway's token counts", b)
	}
	fams := scrapeMetrics(t, base)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mcproxy_gateway_requests_total", map[string]string{"api": "anthropic"}, 1},
		{"mcproxy_gateway_input_tokens_total", map[string]string{"kind": "client"}, st.Gateway.ClientTokens},
		{"mcproxy_gateway_input_tokens_total", map[string]string{"kind": "forwarded"}, st.Gateway.ForwardedTokens},
		{"mcproxy_gateway_usage_tokens_total", map[string]string{"kind": "input"}, 100},
		{"mcproxy_gateway_usage_tokens_total", map[string]string{"kind": "cache_read"}, 300},
		{"mcproxy_gateway_hidden_rounds_total", nil, 0},
	} {
		m, ok := sample(fams, tc.name, tc.labels)
		if !ok || m.GetCounter().GetValue() != tc.want {
			t.Errorf("%s%v: got %v, want %v", tc.name, tc.labels, m, tc.want)
		}
	}
}
