package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestClientSessions: a session saved through one replica's store is
// loaded through another's with its owner, initialize and log level; one
// unseen for the idle timeout is gone, a touch keeps it, the next save
// prunes it; a delete ends it.
func TestClientSessions(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	a, b := open(t, dsn).ClientSessions(time.Minute), open(t, dsn).ClientSessions(time.Minute)
	ctx := context.Background()
	init := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	if err := a.SaveSession(ctx, "mcp-1", "mem/app", init); err != nil {
		t.Fatal(err)
	}
	if err := a.SetLogLevel(ctx, "mcp-1", "debug"); err != nil {
		t.Fatal(err)
	}
	owner, got, level, ok, err := b.LoadSession(ctx, "mcp-1")
	if err != nil || !ok || owner != "mem/app" || string(got) != string(init) || level != "debug" {
		t.Fatalf("LoadSession on the other replica: %q %q %q %v %v, want the saved session at level debug", owner, got, level, ok, err)
	}
	if _, _, _, ok, err := b.LoadSession(ctx, "mcp-none"); ok || err != nil {
		t.Errorf("an unknown session loaded: %v %v", ok, err)
	}

	age := func(id string) {
		t.Helper()
		if _, err := a.s.pool.Exec(ctx, "UPDATE client_sessions SET last_seen = now() - interval '1 hour' WHERE id = $1", id); err != nil {
			t.Fatal(err)
		}
	}
	age("mcp-1")
	if _, _, _, ok, _ := b.LoadSession(ctx, "mcp-1"); ok {
		t.Error("a session unseen for longer than the idle timeout loaded")
	}
	if err := b.TouchSession(ctx, "mcp-1"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok, _ := b.LoadSession(ctx, "mcp-1"); !ok {
		t.Error("a touched session did not load")
	}
	age("mcp-1")
	if err := b.SaveSession(ctx, "mcp-2", "mem/app", init); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.s.pool.QueryRow(ctx, "SELECT count(*) FROM client_sessions WHERE id = 'mcp-1'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the idle session's row survived the next save: %d rows, %v", n, err)
	}
	if err := a.DeleteSession(ctx, "mcp-2"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok, _ := b.LoadSession(ctx, "mcp-2"); ok {
		t.Error("a deleted session loaded")
	}
}
