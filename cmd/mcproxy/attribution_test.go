package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
)

// Attribution (issue 31): a call through a profile with a client token is
// named by that token's name in the call history, /metrics, /status (its
// call and its session) and the dashboard in headless chromium; a call
// with auth_token is named "(admin)"; the token's value appears in none of
// them, nor in the log or on disk.
func TestAttributionNamesTheToken(t *testing.T) {
	bin := chromium(t)
	const admin = "attribution-admin-secret"
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startServe(t, map[string]any{
		"auth_token": admin,
		"data_dir":   dataDir,
		"mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}},
		"profiles":   map[string]any{"bot": map[string]any{"servers": []string{"obs"}}},
	})
	store, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	value, _, err := store.Create(context.Background(), "review-bot", []string{"bot"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually(t, "the new token to be accepted", 5*time.Second, func() bool {
		c, _ := get("/sse/p/bot/message", value) // a GET there is no stream: anything but 401
		return c != http.StatusUnauthorized
	}, s.stderr.String)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bot, err := client.NewStreamableHttpClient(s.base+"/mcp/p/bot", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + value}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bot.Close() })
	startClient(ctx, t, bot)
	botSession := bot.GetSessionId()
	adm := tokenClient(ctx, t, s.base, admin)
	call := func(c *client.Client) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = "call_tool"
		req.Params.Arguments = map[string]any{"name": "obs:echo", "arguments": map[string]any{"message": "hi"}}
		// The profile's upstream may still be connecting: a call before
		// it is up is an error result; retry until it succeeds.
		for {
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("obs:echo never succeeded: %+v", res)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	call(bot)
	call(adm)

	// The call history, as written on disk.
	eventually(t, "both calls in the call history", 5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dataDir, config.ActivityFile))
		return strings.Contains(string(b), `"token":"review-bot"`) && strings.Contains(string(b), `"token":"(admin)"`)
	}, s.stderr.String)

	_, metricsText := get("/metrics", admin)
	if !regexp.MustCompile(`mcproxy_tool_calls_by_token_total\{outcome="ok",token="review-bot"\} [1-9]`).MatchString(metricsText) ||
		!regexp.MustCompile(`mcproxy_tool_calls_by_token_total\{outcome="ok",token="\(admin\)"\} [1-9]`).MatchString(metricsText) {
		t.Errorf("/metrics: want calls counted for review-bot and (admin); got\n%s", grepLines(metricsText, "by_token"))
	}

	code, statusText := get("/status", admin)
	var st dashboard.Status
	if err := json.Unmarshal([]byte(statusText), &st); code != http.StatusOK || err != nil {
		t.Fatalf("/status: %d %v", code, err)
	}
	var botCall bool
	for _, c := range st.Calls {
		if c.Session == botSession {
			botCall = c.Token == "review-bot" && c.Client == t.Name()
		}
	}
	if !botCall {
		t.Errorf("/status calls: want the profile's call named review-bot and %s; got %+v", t.Name(), st.Calls)
	}
	var botSess bool
	for _, se := range st.Sessions {
		if se.ID == botSession {
			botSess = se.Token == "review-bot" && se.Client == t.Name()
		}
	}
	if !botSess {
		t.Errorf("/status sessions: want session %s named review-bot and %s; got %+v", botSession, t.Name(), st.Sessions)
	}

	dom := string(headless(t, bin, s.base+"/#token="+admin, "--dump-dom"))
	row := regexp.MustCompile(`<tr data-call="obs:echo"[^>]*>.*?</tr>`).FindAllString(dom, -1)
	var botRow, adminRow bool
	for _, r := range row {
		botRow = botRow || strings.Contains(r, botSession) && strings.Contains(r, `<td class="token">review-bot</td>`)
		adminRow = adminRow || strings.Contains(r, `<td class="token">(admin)</td>`)
	}
	if !botRow || !adminRow {
		t.Errorf("the dashboard's call log: want a row of session %s naming review-bot and one naming (admin); got %v", botSession, row)
	}
	sess := regexp.MustCompile(`<tr data-session="` + regexp.QuoteMeta(botSession) + `"[^>]*>.*?</tr>`).FindString(dom)
	if !strings.Contains(sess, `<td class="token">review-bot</td>`) {
		t.Errorf("the dashboard's session row: got %q, want it to name review-bot", sess)
	}

	// mcproxy sessions list names the session's client and token from the
	// call history.
	var list strings.Builder
	if code := run(context.Background(), []string{"sessions", "list", "--config", s.config}, strings.NewReader(""), &list, io.Discard); code != exitOK {
		t.Fatalf("sessions list: exit %d", code)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(botSession) + `\s.*\s` + regexp.QuoteMeta(t.Name()) + `\s+review-bot\n`).MatchString(list.String()) {
		t.Errorf("mcproxy sessions list: want session %s with client %s and token review-bot; got\n%s", botSession, t.Name(), list.String())
	}

	for where, text := range map[string]string{"/metrics": metricsText, "/status": statusText, "the dashboard": dom, "the log": s.stderr.String(), "sessions list": list.String()} {
		if strings.Contains(text, value) {
			t.Errorf("%s holds the token's value", where)
		}
	}
	assertNowhereOnDisk(t, dataDir, value)
}

// grepLines is the lines of text holding sub.
func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
