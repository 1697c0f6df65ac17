package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `mcproxy doctor` checks a setup end to end (issue 30): with one server
// that works, one whose entry has problems, one that cannot start, a
// world-writable data dir, an embeddings endpoint nothing answers at and a
// client not pointed at mcproxy, it names
// each problem with its fix and exits 1; with a clean setup (the good
// server, a private data dir, `setup claude-code` done, embeddings and the
// gateway's providers at a live listener) every check is ok
// and it exits 0.
func TestDoctor(t *testing.T) {
	home := t.TempDir()
	good := newGoUpstream(t, "good")
	doctor := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		// VS Code's workspace file is looked for in the current folder.
		env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir()}
		code, out, errOut := runBinaryIn(t, 2*time.Minute, home, env, args...)
		return code, out + errOut
	}
	dataDir := filepath.Join(home, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}

	t.Run("problems", func(t *testing.T) {
		closed := freeAddr(t) // nothing listens there
		cfg := writeConfigFile(t, filepath.Join(home, "broken.json"), map[string]any{
			"data_dir":     dataDir,
			"init_timeout": "30s",
			"mcpServers": map[string]any{
				"good": map[string]any{"url": good.url()},
				"bad":  map[string]any{"command": "x", "enabled": "yes"},
				"gone": map[string]any{"command": filepath.Join(home, "no-such-server")},
			},
			"embeddings": map[string]any{"url": "http://" + closed + "/v1", "model": "m"},
		})
		if err := os.Chmod(dataDir, 0o777); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dataDir, 0o700)
		cursor := filepath.Join(home, ".cursor", "mcp.json")
		if err := os.MkdirAll(filepath.Dir(cursor), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cursor, []byte(`{"mcpServers": {"git": {"command": "git-mcp"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(filepath.Dir(cursor))

		code, out := doctor(t, "doctor", "--config", cfg)
		if code != 1 {
			t.Errorf("doctor: exit %d, want 1\n%s", code, out)
		}
		for _, want := range []string{
			"ok    server good: started, 2 tools",
			"FAIL  server bad: misconfigured, not started: mcpServers.bad.enabled",
			"(fix: fix mcpServers.bad in the config",
			"FAIL  server gone: down: ", "no-such-server",
			"FAIL  data dir: " + dataDir + " is 0777: other users can write to it (fix: chmod 700 " + dataDir + ")",
			"FAIL  embeddings: http://" + closed + "/v1 is not reachable: ",
			"warn  client cursor: " + cursor + " does not launch mcproxy (1 servers of its own) (fix: mcproxy setup cursor)",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor lacks %q:\n%s", want, out)
			}
		}

		// --json says the same, one object per check.
		code, out = doctor(t, "doctor", "--config", cfg, "--json")
		var checks []struct{ Check, Result, Detail, Fix string }
		if err := json.Unmarshal([]byte(out), &checks); err != nil || code != 1 {
			t.Fatalf("doctor --json: exit %d, %v\n%s", code, err, out)
		}
		fails := map[string]bool{}
		for _, c := range checks {
			if c.Result == "FAIL" {
				fails[c.Check] = c.Fix != ""
			}
		}
		if len(fails) != 4 || !fails["server bad"] || !fails["server gone"] || !fails["data dir"] || !fails["embeddings"] {
			t.Errorf("doctor --json: got FAILs %v, want server bad, server gone, data dir and embeddings, each with a fix\n%s", fails, out)
		}
	})

	t.Run("clean", func(t *testing.T) {
		cfg := writeConfigFile(t, filepath.Join(home, "clean.json"), map[string]any{
			"data_dir":   dataDir,
			"mcpServers": map[string]any{"good": map[string]any{"url": good.url()}},
			// Any listener will do: doctor only connects, sending nothing.
			"embeddings": map[string]any{"url": "http://" + good.addr + "/v1", "model": "m"},
			"gateway": map[string]any{"enabled": true, "anthropic": map[string]any{"base_url": "http://" + good.addr},
				"openai": map[string]any{"base_url": "http://" + good.addr}},
		})
		if code, out := doctor(t, "setup", "claude-code", "--config", cfg); code != 0 {
			t.Fatalf("setup claude-code: exit %d\n%s", code, out)
		}
		code, out := doctor(t, "doctor", "--config", cfg)
		if code != 0 {
			t.Errorf("doctor on a clean setup: exit %d, want 0\n%s", code, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.HasPrefix(line, "ok ") {
				t.Errorf("doctor on a clean setup: got %q, want every check ok\n%s", line, out)
			}
		}
		for _, want := range []string{"ok    embeddings: http://" + good.addr + "/v1 answers", "ok    gateway anthropic: ", "ok    gateway openai: "} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor lacks %q:\n%s", want, out)
			}
		}
		if want := "ok    client claude-code: " + filepath.Join(home, ".claude.json") + " launches this mcproxy (" + binary + ")"; !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	})
}
