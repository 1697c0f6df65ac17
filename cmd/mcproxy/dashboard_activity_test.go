package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// activityUpstream is a real MCP server over streamable HTTP with echo
// (succeeds) and fail (a tool error).
func activityUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	serveActivity(t, srv)
	return srv.URL + "/mcp"
}

// serveActivity starts srv serving activityUpstream's MCP server; the test's
// cleanup stops it.
func serveActivity(t *testing.T, srv *httptest.Server) {
	t.Helper()
	s := mcpserver.NewMCPServer("obs", "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo a message."), mcp.WithString("message", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo: " + req.GetString("message", "")), nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Fail on purpose.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("failed on purpose"), nil
		})
	streamable := mcpserver.NewStreamableHTTPServer(s)
	srv.Config.Handler = streamable
	srv.Start()
	t.Cleanup(func() {
		// The streams mcproxy holds open end first, so Close does not
		// wait for them.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		srv.Close()
	})
}

// The dashboard in headless chromium after real activity: a call that
// succeeds and one that fails appear in the call log with their client,
// session, durations and the error; the per-tool and per-server figures
// count them; the session shows its client and its live message count
// (state.json is not written yet); and after one model request through the
// gateway (a scripted model reporting cache reads) its figures show. A
// server that is down and one that is misconfigured sit beside them, so
// that the screenshot in docs/dashboard.png (-update-screenshot) shows every
// panel.
func TestDashboardShowsActivity(t *testing.T) {
	bin := chromium(t)
	const token = "dash-activity-secret"
	model := scriptedmodel.New(func(*scriptedmodel.Request) scriptedmodel.Reply {
		r := scriptedmodel.Say("hello from the scripted model")
		r.Usage = scriptedmodel.Usage{InputTokens: 100, CacheRead: 300, OutputTokens: 5}
		return r
	})
	defer model.Close()
	s := startServe(t, map[string]any{
		"auth_token": token,
		"mcpServers": map[string]any{
			"obs":    map[string]any{"url": activityUpstream(t)},
			"broken": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-mcp-server")},
			"typo":   map[string]any{"command": "mcp-server-typo", "call_timeout": "soon"},
		},
		"gateway": map[string]any{"enabled": true, "anthropic": map[string]any{"base_url": model.URL}},
	})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := tokenClient(ctx, t, s.base, token)
	session := c.GetSessionId()
	for _, tc := range []struct {
		id      string
		args    map[string]any
		isError bool
	}{
		{"obs:echo", map[string]any{"message": "hi"}, false},
		{"obs:fail", nil, true},
	} {
		call := mcp.CallToolRequest{}
		call.Params.Name = "call_tool"
		call.Params.Arguments = map[string]any{"name": tc.id, "arguments": tc.args}
		res, err := c.CallTool(ctx, call)
		if err != nil || res.IsError != tc.isError {
			t.Fatalf("call_tool %s: got %v %+v, want isError %v", tc.id, err, res, tc.isError)
		}
	}

	// One model request through the gateway, as a client sends it.
	body := `{"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-ant-test-key")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Mcproxy-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer bytes.Buffer
	_, _ = answer.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(answer.String(), "hello from the scripted model") {
		t.Fatalf("the gateway request: got %d %s", resp.StatusCode, answer.String())
	}

	// /status says the same as the page will.
	sreq, _ := http.NewRequest(http.MethodGet, s.base+"/status", nil)
	sreq.Header.Set("Authorization", "Bearer "+token)
	sresp, err := http.DefaultClient.Do(sreq)
	if err != nil {
		t.Fatal(err)
	}
	var st dashboard.Status
	err = json.NewDecoder(sresp.Body).Decode(&st)
	sresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Calls) != 2 || st.Calls[0].Tool != "fail" || st.Calls[0].Error == "" || st.Calls[1].Tool != "echo" || st.Calls[1].Error != "" {
		t.Errorf("/status calls: got %+v, want fail (an error) then echo (ok), newest first", st.Calls)
	}
	if g := st.Gateway; g == nil || g.Requests != 1 || g.ClientTokens <= 0 || g.ForwardedTokens != g.ClientTokens ||
		g.UsageInput != 100 || g.UsageCacheRead != 300 || g.CacheShare != 0.75 {
		t.Errorf("/status gateway: got %+v, want 1 request, client tokens forwarded as they came, usage 100 input + 300 cache read (75%%)", g)
	}

	dom := string(headless(t, bin, s.base+"/#token="+token, "--dump-dom"))
	row := func(attr string) string {
		t.Helper()
		m := regexp.MustCompile(`<tr ` + regexp.QuoteMeta(attr) + `[^>]*>.*?</tr>`).FindString(dom)
		if m == "" {
			t.Errorf("the page has no row %s; DOM:\n%s", attr, dom)
		}
		return m
	}
	duration := regexp.MustCompile(`<td class="num duration">[0-9.]+ m?s</td>`)
	client := `<td class="client">` + t.Name() + `</td>`
	ok := row(`data-call="obs:echo"`)
	failed := row(`data-call="obs:fail"`)
	for _, r := range []string{ok, failed} {
		if !duration.MatchString(r) || !strings.Contains(r, client) || !strings.Contains(r, session) {
			t.Errorf("call row %s: want its duration, client %s and session %s", r, t.Name(), session)
		}
	}
	if !strings.Contains(ok, `<span class="result ok">ok</span>`) {
		t.Errorf("the echo call's row: got %s, want it marked ok", ok)
	}
	if !strings.Contains(failed, `<span class="result error">failed on purpose</span>`) {
		t.Errorf("the failed call's row: got %s, want the error text", failed)
	}
	if strings.Index(dom, `data-call="obs:fail"`) > strings.Index(dom, `data-call="obs:echo"`) {
		t.Errorf("the call log: want the newest call (obs:fail) first")
	}
	for _, tc := range []struct{ attr, calls, errors string }{
		{`data-tool="obs:echo"`, "1", "0"}, {`data-tool="obs:fail"`, "1", "1 (100.0%)"}, {`data-server-stats="obs"`, "2", "1 (50.0%)"},
	} {
		r := row(tc.attr)
		if !strings.Contains(r, `<td class="num calls">`+tc.calls+`</td>`) || !strings.Contains(r, `<td class="num errors">`+tc.errors+`</td>`) {
			t.Errorf("row %s: got %s, want %s calls and %s errors", tc.attr, r, tc.calls, tc.errors)
		}
	}
	sess := row(`data-session="` + session + `"`)
	if !strings.Contains(sess, client) || regexp.MustCompile(`<td class="messages">[1-9][0-9]*</td>`).FindString(sess) == "" {
		t.Errorf("the session's row: got %s, want client %s and its live message count (not 0)", sess, t.Name())
	}
	for _, want := range []string{
		`<dd id="gw-requests">1</dd>`, `<dd id="gw-cache">75.0%</dd>`, `<dd id="gw-hidden">0</dd>`,
		`<dd id="gw-saved">0 tokens (0.0%)</dd>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s; DOM:\n%s", want, dom)
		}
	}
	if strings.Contains(dom, `<div id="gateway" hidden`) {
		t.Errorf("the gateway figures are hidden")
	}
	if *updateScreenshot {
		shot := screenshot(t, bin, s.base+"/?q=echo+a+message#token="+token, 1280, 1100)
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
