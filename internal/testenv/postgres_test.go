package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { VerifyNoLeaks(m) }

// TestPostgres: each call is a database of its own on a real server, empty
// and writable, and dropped when its test ends.
func TestPostgres(t *testing.T) {
	ctx := context.Background()
	var names []string
	for i := range 2 {
		t.Run("db", func(t *testing.T) {
			conn, err := pgx.Connect(ctx, Postgres(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var name string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
			// The same table in both: a shared database would refuse the second.
			if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE t (v int); INSERT INTO t VALUES (%d)", i)); err != nil {
				t.Fatalf("creating a table in %s: %v", name, err)
			}
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("got databases %v, want two distinct", names)
	}
	conn, err := pgx.Connect(ctx, pgServer.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("got %d of the tests' databases after they ended, want 0 (dropped)", n)
	}
}

// TestPostgresMissingSkipsUnlessRequired: with no server to be had a test
// that needs one is skipped with the fix, and with MCPROXY_REQUIRE_POSTGRES
// set (scripts/test, CI) it fails instead.
func TestPostgresMissingSkipsUnlessRequired(t *testing.T) {
	if os.Getenv("TESTENV_PG_CHILD") != "" {
		Postgres(t)
		return
	}
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresMissingSkipsUnlessRequired$", "-test.v")
		// Port 1 on loopback: nothing listens there.
		cmd.Env = append(os.Environ(), "TESTENV_PG_CHILD=1", PostgresDSNEnv+"=postgres://u@127.0.0.1:1/x?connect_timeout=2", RequirePostgresEnv+"="+require)
		out, err := cmd.CombinedOutput()
		fix := "apt-get install -y postgresql"
		switch {
		case require == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), fix)):
			t.Errorf("without %s: want a skip that says how to get a server, got (%v):\n%s", RequirePostgresEnv, err, out)
		case require != "" && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), fix)):
			t.Errorf("with %s=1: want a failure that says how to get a server, got (%v):\n%s", RequirePostgresEnv, err, out)
		}
	}
}
