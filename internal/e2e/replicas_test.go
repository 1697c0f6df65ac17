package e2e

import (
	"context"
	"fmt"
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
