package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// HTTP profiles follow config reloads through the binary (issue 31): a
// profile added to the file is served, one whose tools change shows its
// connected client the new set, a refused edit keeps the running profiles,
// and a removed profile is no longer served, all without a restart.
func TestProfilesFollowReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := newGoUpstream(t, "a"), newGoUpstream(t, "b")
	const admin = "reload-admin-token"
	cfg := map[string]any{
		"mcpServers": map[string]any{"a": map[string]any{"url": a.url()}, "b": map[string]any{"url": b.url()}},
		"data_dir":   filepath.Join(dir, "data"),
		"auth_token": admin,
		"mode":       "direct",
		"noa":        map[string]any{"enabled": false},
		"profiles":   map[string]any{"pa": map[string]any{"servers": []string{"a"}}},
	}
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), cfg)
	base, p := serveHTTP(t, config)
	auth := transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + admin})
	status := func(profile string) int { return pingProfile(t, base, profile, admin) }
	listed := func(t *testing.T, profile string, want ...string) {
		t.Helper()
		c := startHTTP(t, base+"/mcp/p/"+profile, auth)
		initialize(t, c)
		var got []string
		waitFor(t, 30*time.Second, fmt.Sprintf("profile %s to list %v", profile, want), func() bool {
			got = listTools(t, c)
			slices.Sort(got)
			return slices.Equal(got, want)
		})
	}

	pa := startHTTP(t, base+"/mcp/p/pa", auth)
	initialize(t, pa)
	waitFor(t, 30*time.Second, "profile pa to list a's tools", func() bool {
		return slices.Equal(sorted(listTools(t, pa)), []string{"a__echo", "a__wait"})
	})
	if c := status("pb"); c != http.StatusNotFound {
		t.Fatalf("profile pb before it is configured: %d, want 404", c)
	}

	// Add pb and change pa's tools: the running client of pa sees them.
	cfg["profiles"] = map[string]any{
		"pa": map[string]any{"tools": []string{"a:echo", "b:echo"}},
		"pb": map[string]any{"servers": []string{"b"}},
	}
	writeConfigFile(t, config, cfg)
	waitFor(t, 30*time.Second, "pa's connected client to list a:echo and b:echo", func() bool {
		return slices.Equal(sorted(listTools(t, pa)), []string{"a__echo", "b__echo"})
	})
	listed(t, "pb", "b__echo", "b__wait")

	// A refused edit (a bad mode) that would also remove pb keeps the
	// running profiles.
	cfg["mode"] = "bogus"
	cfg["profiles"] = map[string]any{"pa": map[string]any{"servers": []string{"a"}}}
	writeConfigFile(t, config, cfg)
	waitFor(t, 30*time.Second, "the refused reload in the log", func() bool {
		return strings.Contains(p.output(), "config change refused")
	})
	listed(t, "pb", "b__echo", "b__wait")
	if got := sorted(listTools(t, pa)); !slices.Equal(got, []string{"a__echo", "b__echo"}) {
		t.Errorf("pa after a refused edit lists %v, want the running selection [a__echo b__echo]", got)
	}

	// The same edit fixed: pb is gone, pa is a's again.
	cfg["mode"] = "direct"
	writeConfigFile(t, config, cfg)
	waitFor(t, 30*time.Second, "profile pb to be removed", func() bool { return status("pb") == http.StatusNotFound })
	waitFor(t, 30*time.Second, "pa's connected client to list a's tools again", func() bool {
		return slices.Equal(sorted(listTools(t, pa)), []string{"a__echo", "a__wait"})
	})
}

// pingProfile POSTs a ping to profile's streamable HTTP endpoint with
// token and returns the status.
func pingProfile(t testing.TB, base, profile, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp/p/"+profile, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
