package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestReplicasSharePostgres is part of issue 32's acceptance through the
// binary: three mcproxy replicas, each with a data directory of its own,
// share one real PostgreSQL database. Started at once, they migrate the
// schema once between them; a quarantined server's tool held on every
// replica and approved with `mcproxy tools approve` (through a fourth
// process) runs on the other replicas within a second.
func TestReplicasSharePostgres(t *testing.T) {
	dsn := testenv.Postgres(t)
	// Through ${VAR}, as the README tells: the DSN stays out of the file.
	t.Setenv("MCPROXY_E2E_PG_DSN", dsn)
	up := newGoUpstream(t, "quar")
	dir := t.TempDir()
	const replicas = 3
	configs := make([]string, replicas)
	procs := make([]*proc, replicas)
	addrs := make([]string, replicas)
	for i := range replicas {
		configs[i] = writeConfigFile(t, filepath.Join(dir, fmt.Sprintf("config%d.json", i)), map[string]any{
			"mcpServers": map[string]any{"quar": map[string]any{"url": up.url(), "quarantine": true}},
			"data_dir":   filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"store":      map[string]any{"postgres": "${MCPROXY_E2E_PG_DSN}"},
		})
		addrs[i] = freeAddr(t)
	}
	// Started together, before any listens: they race for the migration.
	for i := range replicas {
		procs[i] = startProc(t, fmt.Sprintf("replica %d", i), osexec.Command(binary, "serve", "--config", configs[i], "--listen", addrs[i]))
	}
	for i := range replicas {
		waitListening(t, addrs[i], procs[i])
	}
	applied := 0
	for _, p := range procs {
		applied += strings.Count(p.output(), "applied a schema migration")
		if strings.Contains(p.output(), strings.TrimPrefix(dsn, "postgres://")) {
			t.Errorf("%s logs the DSN", p.name)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var migrations int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&migrations); err != nil {
		t.Fatal(err)
	}
	if migrations == 0 || applied != migrations {
		t.Errorf("the replicas applied %d migrations between them, want each of the %d once", applied, migrations)
	}

	clients := make([]*client.Client, replicas)
	for i := range replicas {
		clients[i] = startHTTP(t, "http://"+addrs[i]+"/mcp")
		initialize(t, clients[i])
	}
	call := func(c *client.Client, msg string) *mcp.CallToolResult {
		return callTool(t, c, "call_tool", map[string]any{"name": "quar:echo", "arguments": map[string]any{"message": msg}})
	}
	for i, c := range clients {
		waitFor(t, 30*time.Second, fmt.Sprintf("replica %d to hold quar:echo (quarantine)", i), func() bool {
			res := call(c, "x")
			return res.IsError && strings.Contains(text(res), "mcproxy tools approve quar:echo")
		})
	}
	code, out, errOut := runBinary(t, time.Minute, "tools", "approve", "quar:echo", "--config", configs[1])
	if code != 0 || !strings.Contains(out, "Approved quar:echo") {
		t.Fatalf("tools approve: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	approved := time.Now()
	for _, i := range []int{0, 2} {
		c := clients[i]
		for {
			res := call(c, "y")
			if !res.IsError && upstreamText(res) == "quar says y" {
				t.Logf("replica %d runs the approved tool %v after the approval", i, time.Since(approved))
				break
			}
			if time.Since(approved) > time.Second {
				t.Fatalf("replica %d still refuses quar:echo a second after the approval: %q", i, text(res))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestTokensAcrossReplicas is issue 32's token acceptance through the
// binary: two replicas share one PostgreSQL database; a client token made
// with `mcproxy tokens create` against one replica's config opens the
// profile on the other, and once revoked through the other's config gets
// 401 from the first within a second, without a restart. Its value is in
// neither replica's data directory nor log.
func TestTokensAcrossReplicas(t *testing.T) {
	dsn := testenv.Postgres(t)
	t.Setenv("MCPROXY_E2E_PG_DSN", dsn)
	up := newGoUpstream(t, "up")
	dir := t.TempDir()
	const replicas = 2
	configs := make([]string, replicas)
	procs := make([]*proc, replicas)
	addrs := make([]string, replicas)
	for i := range replicas {
		configs[i] = writeConfigFile(t, filepath.Join(dir, fmt.Sprintf("config%d.json", i)), map[string]any{
			"mcpServers": map[string]any{"up": map[string]any{"url": up.url()}},
			"data_dir":   filepath.Join(dir, fmt.Sprintf("data%d", i)),
			"auth_token": "e2e-admin-token",
			"profiles":   map[string]any{"p": map[string]any{"servers": []string{"up"}}},
			"store":      map[string]any{"postgres": "${MCPROXY_E2E_PG_DSN}"},
		})
		addrs[i] = freeAddr(t)
		procs[i] = startProc(t, fmt.Sprintf("replica %d", i), osexec.Command(binary, "serve", "--config", configs[i], "--listen", addrs[i]))
	}
	for i := range replicas {
		waitListening(t, addrs[i], procs[i])
	}
	post := func(i int, tok string) int { return pingProfile(t, "http://"+addrs[i], "p", tok) }
	// within polls replica i until its answer to tok is (or is not) want,
	// failing past a second.
	within := func(i int, tok string, want int, is bool, what string) {
		t.Helper()
		start := time.Now()
		for {
			if c := post(i, tok); (c == want) == is {
				t.Logf("%s after %v", what, time.Since(start))
				return
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s: not within a second", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	code, out, errOut := runBinary(t, 30*time.Second, "tokens", "create", "bot", "--profile", "p", "--config", configs[0])
	if code != 0 {
		t.Fatalf("tokens create: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	tok := lines[len(lines)-1]
	within(1, tok, http.StatusUnauthorized, false, "replica 1 accepts the token created with replica 0's config")
	if c := post(1, tok); c == http.StatusUnauthorized || c == http.StatusForbidden {
		t.Errorf("replica 1 answered the token's ping with %d, want it let through to the profile", c)
	}
	if _, out, _ := runBinary(t, 30*time.Second, "tokens", "list", "--config", configs[1]); !strings.Contains(out, "bot") {
		t.Errorf("tokens list with replica 1's config does not show bot:\n%s", out)
	}
	if code, out, errOut := runBinary(t, 30*time.Second, "tokens", "revoke", "bot", "--config", configs[1]); code != 0 {
		t.Fatalf("tokens revoke: exit %d\n%s%s", code, out, errOut)
	}
	within(0, tok, http.StatusUnauthorized, true, "replica 0 refuses the token revoked with replica 1's config")

	for _, p := range procs {
		if strings.Contains(p.output(), tok) {
			t.Errorf("%s logs the token's value", p.name)
		}
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), tok) {
			t.Errorf("%s holds the token's value", path)
		}
		if filepath.Base(path) == "tokens.json" {
			t.Errorf("%s: with a shared store the tokens belong in the database", path)
		}
		return nil
	})
}
