package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestCommandsUseSharedStore: with store.postgres, `mcproxy tokens` and
// `mcproxy auth` read and write the tokens in the database every replica
// shares, not the data directory.
func TestCommandsUseSharedStore(t *testing.T) {
	dsn := testenv.Postgres(t)
	t.Setenv("MCPROXY_TEST_PG_DSN", dsn)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	cfgPath := filepath.Join(dir, "config.json")
	cfg := `{"mcpServers": {"memory": {"command": "mcp-memory"}, "hosted": {"url": "https://mcp.example.com/mcp"}},
	  "data_dir": "` + dataDir + `", "store": {"postgres": "${MCPROXY_TEST_PG_DSN}"},
	  "profiles": {"desk": {"servers": ["memory"]}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "tokens", "create", "desk-app", "--profile", "desk", "--config", cfgPath)
	if code != exitOK {
		t.Fatalf("tokens create: exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	value := lines[len(lines)-1]

	st, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tokens, err := st.Tokens(context.Background(), pgstore.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := tokens.Check(value); err != nil || tok.Name != "desk-app" {
		t.Errorf("the database does not hold the created token: %+v, %v", tok, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "tokens.json")); err == nil {
		t.Error("tokens create wrote tokens.json with a shared store configured")
	}

	if err := st.OAuth().Save("hosted", &oauth.Record{ServerURL: "https://mcp.example.com/mcp",
		Token: &oauth.Token{AccessToken: "at-stored-in-db", RefreshToken: "rt-stored-in-db", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "auth", "status", "--config", cfgPath)
	if code != exitOK || !strings.Contains(out, "signed in") || strings.Contains(out, "not signed in") || strings.Contains(out+errOut, "stored-in-db") {
		t.Errorf("auth status: exit %d; want hosted signed in from the database, no token shown\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "auth", "logout", "hosted", "--config", cfgPath); code != exitOK {
		t.Fatalf("auth logout: exit %d\n%s%s", code, out, errOut)
	}
	if r, err := st.OAuth().Load("hosted"); err != nil || r != nil {
		t.Errorf("after logout the database still holds %+v (%v)", r, err)
	}
}
