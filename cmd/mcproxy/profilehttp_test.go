package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// Two profiles on one process over streamable HTTP: each token's client
// sees exactly its profile's tools; a call outside is unknown; a token
// for another profile gets 403; a revoked one 401 within a second; the
// default endpoint takes only auth_token.
func TestServeHTTPProfiles(t *testing.T) {
	cfg := profileConfig(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg["data_dir"] = dataDir
	cfg["auth_token"] = "admin-token-for-the-test"
	s := startServe(t, cfg)
	store, err := clienttoken.Open(dataDir, clienttoken.Options{})
	if err != nil {
		t.Fatal(err)
	}
	echoTok, _, err := store.Create(context.Background(), "echo-bot", []string{"echo"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	memTok, _, err := store.Create(context.Background(), "mem-app", []string{"mem"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	post := func(path, tok string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The running process sees the tokens created after it started.
	eventually(t, "the new tokens to be accepted", 5*time.Second, func() bool {
		c, _ := post("/mcp/p/echo", echoTok)
		return c != http.StatusUnauthorized
	}, s.stderr.String)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	connect := func(profile, tok string) *client.Client {
		c, err := client.NewStreamableHttpClient(s.base+"/mcp/p/"+profile, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		startClient(ctx, t, c)
		return c
	}
	echo := connect("echo", echoTok)
	names := listedOnceHolding(ctx, t, echo, "everything__echo", s.stderr.String)
	// Compress and read_archive are noa's own tools, in every profile.
	upstreamTools := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "Compress" || n == "read_archive" })
	if !slices.Equal(upstreamTools, []string{"everything__echo"}) {
		t.Errorf("echo profile tools/list = %v, want exactly everything__echo besides noa's tools", names)
	}

	// A profile's calls reach the call history as the default profile's do.
	call := mcp.CallToolRequest{}
	call.Params.Name = "everything__echo"
	call.Params.Arguments = map[string]any{"message": "through a profile"}
	if res, err := echo.CallTool(ctx, call); err != nil || res.IsError {
		t.Fatalf("echo profile calling everything__echo: %v %+v", err, res)
	}
	eventually(t, "the profile's call in the call history", 5*time.Second, func() bool {
		b, _ := os.ReadFile(filepath.Join(dataDir, config.ActivityFile))
		return strings.Contains(string(b), `"tool":"echo"`)
	}, s.stderr.String)

	mem := connect("mem", memTok)
	req := mcp.CallToolRequest{}
	req.Params.Name = "call_tool"
	req.Params.Arguments = map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "x"}}
	res, err := mem.CallTool(ctx, req)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `Unknown tool "everything:echo"`) {
		t.Errorf("mem profile calling everything:echo: %v %+v", err, res)
	}

	if c, body := post("/mcp/p/mem", echoTok); c != http.StatusForbidden || !strings.Contains(body, "client token echo-bot is not for profile mem") {
		t.Errorf("echo token on the mem profile: %d %q", c, body)
	}
	if c, _ := post("/mcp", echoTok); c != http.StatusUnauthorized {
		t.Errorf("a client token on the default endpoint: %d, want 401", c)
	}
	if c, _ := post("/mcp/p/mem", "admin-token-for-the-test"); c == http.StatusUnauthorized || c == http.StatusForbidden {
		t.Errorf("auth_token on a profile: %d", c)
	}
	start := time.Now()
	if err := store.Revoke(context.Background(), "mem-app"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revocation to be seen", time.Second, func() bool {
		c, _ := post("/mcp/p/mem", memTok)
		return c == http.StatusUnauthorized
	}, s.stderr.String)
	t.Logf("revocation seen after %v", time.Since(start))
	if strings.Contains(s.stderr.String(), echoTok) || strings.Contains(s.stderr.String(), memTok) {
		t.Error("a token value is in the log")
	}
	assertNowhereOnDisk(t, dataDir, echoTok)
	assertNowhereOnDisk(t, dataDir, memTok)
}

// A server in two profiles starts once (issue 31): every profile is a
// view over the default endpoint's upstreams, not a stack of its own. The
// server is started through a shell that appends a line to a file each
// time it runs.
func TestHTTPProfilesShareUpstreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": "sh", "args": []string{"-c", `echo started >> "$0"; exec "$1"`, starts, testenv.NodeBin(t, "mcp-server-everything")}},
			"memory":     map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory")},
		},
		"auth_token": "admin-token-for-the-test",
		"profiles": map[string]any{
			"all": map[string]any{"servers": []string{"everything"}, "mode": "direct"},
			"one": map[string]any{"tools": []string{"everything:echo"}, "mode": "direct"},
			"mem": map[string]any{"servers": []string{"memory"}, "mode": "direct"},
		},
	}
	s := startServe(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lists := map[string][]string{}
	clients := map[string]*client.Client{}
	for _, p := range []string{"all", "one", "mem"} {
		c, err := client.NewStreamableHttpClient(s.base+"/mcp/p/"+p, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer admin-token-for-the-test"}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		startClient(ctx, t, c)
		clients[p] = c
		want := "everything__echo"
		if p == "mem" {
			want = "memory__read_graph"
		}
		lists[p] = listedOnceHolding(ctx, t, c, want, s.stderr.String)
	}
	if slices.ContainsFunc(lists["mem"], func(n string) bool { return strings.HasPrefix(n, "everything__") }) {
		t.Errorf("mem profile tools/list = %v, want no tool of everything", lists["mem"])
	}
	// Prompts are the profile's servers' alone, from the one manager.
	prompts := func(p string) []string {
		res, err := clients[p].ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatalf("profile %s prompts/list: %v", p, err)
		}
		var names []string
		for _, pr := range res.Prompts {
			names = append(names, pr.Name)
		}
		return names
	}
	eventually(t, "the all profile to list everything's prompts", 30*time.Second, func() bool {
		return slices.ContainsFunc(prompts("all"), func(n string) bool { return strings.HasPrefix(n, "everything__") })
	}, s.stderr.String)
	if got := prompts("mem"); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, "everything__") }) {
		t.Errorf("mem profile prompts/list = %v, want no prompt of everything", got)
	}
	if !slices.Contains(lists["all"], "everything__get-sum") || slices.Contains(lists["one"], "everything__get-sum") {
		t.Errorf("tools/list: all %v, one %v; want every tool in all, only echo in one", lists["all"], lists["one"])
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Errorf("the everything server started %d times for the default endpoint and two profiles, want once\n%s", n, s.stderr.String())
	}
}
