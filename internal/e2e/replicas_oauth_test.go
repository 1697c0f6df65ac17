package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestOAuthAcrossReplicas is issue 32's OAuth acceptance through the
// binary: two replicas share one PostgreSQL database in front of an
// OAuth-protected MCP server whose authorization server rotates refresh
// tokens. One `mcproxy auth login` against one replica's config signs both
// in (the other connects without a restart), and once the access token is
// due for refresh (30 s before its expiry) both replicas, called at once,
// spend the refresh token once between them: one refresh grant, both
// answered, neither sent back to sign in.
func TestOAuthAcrossReplicas(t *testing.T) {
	dsn := testenv.Postgres(t)
	t.Setenv("MCPROXY_E2E_PG_DSN", dsn)
	helper := oauthClient(t)
	rs, bind := newProtectedServer(t)
	// Due for refresh 3 s after it is issued (the proxy refreshes 30 s
	// before expiry), valid long after.
	const ttl = 33 * time.Second
	as := newAuthServer(t, rs.URL+"/mcp", ttl)
	bind(as)
	t.Setenv("BROWSER", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")

	dir := t.TempDir()
	configs := make([]string, 2)
	clients := make([]*client.Client, 2)
	for i := range configs {
		configs[i] = writeConfigFile(t, filepath.Join(dir, fmt.Sprintf("config%d.json", i)), map[string]any{
			"mcpServers": map[string]any{"vault": map[string]any{"url": rs.URL + "/mcp"}},
			"data_dir":   filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"store":      map[string]any{"postgres": "${MCPROXY_E2E_PG_DSN}"},
		})
	}
	procs := make([]*proc, 2)
	for i := range configs {
		var base string
		base, procs[i] = serveHTTP(t, configs[i])
		clients[i] = startHTTP(t, base+"/mcp")
		initialize(t, clients[i])
	}
	call := func(i int) (string, bool) {
		res := callTool(t, clients[i], "call_tool", map[string]any{"name": "vault:vault_secret_count", "arguments": map[string]any{}})
		return text(res), !res.IsError && strings.Contains(text(res), "42 secrets")
	}
	if out, ok := call(1); ok || !strings.Contains(out, "needs sign-in") {
		t.Fatalf("before sign-in replica 1 answered %q, want needs sign-in", out)
	}

	login := exec.Command(binary, "auth", "login", "vault", "--config", configs[0])
	login.Env = append(os.Environ(), "BROWSER="+helper+" open")
	out, err := login.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signed in to vault") || !strings.Contains(string(out), "the shared store postgres://") {
		t.Fatalf("mcproxy auth login: %v\n%s", err, out)
	}
	signedIn := time.Now()
	for i := range clients {
		waitFor(t, 20*time.Second, fmt.Sprintf("replica %d to connect after the sign-in", i), func() bool { _, ok := call(i); return ok })
	}
	for i := range configs {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("data%d", i), "oauth", "vault.json")); err == nil {
			t.Errorf("replica %d has a token file: with a shared store the tokens belong in the database", i)
		}
	}
	if n := as.issued("authorization_code"); n != 1 {
		t.Errorf("authorization code grants: got %d, want 1 (one sign-in for both replicas)", n)
	}
	before := as.issued("refresh_token")

	// Wait on the clock itself: the token becomes due 3 s after issue.
	time.Sleep(time.Until(signedIn.Add(ttl - 30*time.Second + 500*time.Millisecond)))
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			if out, ok := call(i); !ok {
				t.Errorf("replica %d after the token came due: %q, want the tool's answer", i, out)
			}
		})
	}
	wg.Wait()
	if n := as.issued("refresh_token") - before; n != 1 {
		t.Errorf("refresh grants once the token came due: got %d, want 1 for both replicas", n)
	}
	for i := range clients {
		if out, ok := call(i); !ok {
			t.Errorf("replica %d afterwards: %q", i, out)
		}
	}
	for _, p := range procs {
		if strings.Contains(p.output(), "signing in again") {
			t.Errorf("%s was sent to sign in again:\n%s", p.name, lastLines(p.output(), 20))
		}
	}
}
