package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// Two profiles on one process through the binary and the official
// TypeScript SDK (testdata/profiles.mjs): each client sees exactly its
// tools over streamable HTTP, legacy SSE and stdio, a call outside is refused, a token
// for another profile gets 403; then a revoked token gets 401 within a
// second without a restart, an expired one is refused, a per-token rate
// limit holds under 8 concurrent clients with the other token unaffected,
// and no token value is on disk or in the logs.
func TestProfilesThroughTheBinary(t *testing.T) {
	needNode(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
			"memory":     map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory")},
		},
		"data_dir":     dataDir,
		"init_timeout": "60s",
		"auth_token":   "e2e-admin-token",
		"profiles": map[string]any{
			"echo": map[string]any{"tools": []string{"everything:echo"}, "mode": "direct",
				"rate_limit": map[string]any{"calls_per_second": 10, "burst": 10}},
			"mem": map[string]any{"servers": []string{"memory"}},
		},
	})
	create := func(name, profile string, extra ...string) string {
		code, out, errOut := runBinary(t, 30*time.Second, append([]string{"tokens", "create", name, "--profile", profile, "--config", config}, extra...)...)
		if code != 0 {
			t.Fatalf("tokens create %s: %d\n%s%s", name, code, out, errOut)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		return lines[len(lines)-1]
	}
	echoTok, memTok := create("echo-bot", "echo"), create("mem-app", "mem")
	base, p := serveHTTP(t, config)

	arg, _ := json.Marshal(map[string]any{"base": base, "echo": echoTok, "mem": memTok, "binary": binary, "config": config})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "profiles.mjs"), string(arg)).CombinedOutput()
	if err != nil {
		t.Fatalf("profiles.mjs (TypeScript SDK client): %v\n%s\nmcproxy:\n%s", err, out, p.output())
	}
	t.Logf("profiles.mjs:\n%s", out)

	post := func(profile, tok string) int { return pingProfile(t, base, profile, tok) }

	// 8 concurrent clients on one token at 10 calls/s (burst 10) for a
	// second; the other token meanwhile.
	var ok, refused, other atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Since(start) < time.Second {
				switch c := post("echo", echoTok); c {
				case http.StatusTooManyRequests:
					refused.Add(1)
				case http.StatusUnauthorized, http.StatusForbidden:
					t.Errorf("status %d", c)
					return
				default:
					ok.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if post("mem", memTok) == http.StatusTooManyRequests {
				other.Add(1)
			}
			time.Sleep(150 * time.Millisecond)
		}
	})
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	t.Logf("rate limit 10/s burst 10, 8 clients: %d allowed, %d refused in %.2fs; other token refused %d", ok.Load(), refused.Load(), elapsed, other.Load())
	if max := 10 + int64(10*elapsed) + 1; ok.Load() > max || refused.Load() == 0 {
		t.Errorf("%d allowed (at most %d), %d refused", ok.Load(), max, refused.Load())
	}
	if other.Load() != 0 {
		t.Errorf("the other token was refused %d times", other.Load())
	}

	// Revoked: 401 within a second, no restart.
	if code, out, errOut := runBinary(t, 30*time.Second, "tokens", "revoke", "mem-app", "--config", config); code != 0 {
		t.Fatalf("revoke: %d %s%s", code, out, errOut)
	}
	revoked := time.Now()
	for post("mem", memTok) != http.StatusUnauthorized {
		if time.Since(revoked) > time.Second {
			t.Fatal("the revoked token still works a second later")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("revocation refused after %v", time.Since(revoked))

	// Expired: refused.
	short := create("short", "mem", "--expires", "2s")
	waitFor(t, 5*time.Second, "the new token", func() bool { return post("mem", short) != http.StatusUnauthorized })
	time.Sleep(2100 * time.Millisecond)
	if c := post("mem", short); c != http.StatusUnauthorized {
		t.Errorf("an expired token: %d, want 401", c)
	}

	for _, v := range []string{echoTok, memTok, short} {
		if strings.Contains(p.output(), v) {
			t.Error("a token value is in mcproxy's log")
		}
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), v) {
				t.Errorf("%s holds a token value", path)
			}
			return nil
		})
	}
}
