package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// conformanceScenarios are the client scenarios of the official MCP
// conformance suite (0.1.13) that concern authorization, by suite. Every
// one applies to mcproxy as the upstream client: none is skipped.
var conformanceScenarios = map[string][]string{
	"auth": {
		"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
		"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
		"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
		"auth/resource-mismatch", "auth/pre-registration",
	},
	"backcompat": {"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"},
	"extensions": {"auth/client-credentials-jwt", "auth/client-credentials-basic"},
}

// TestOAuthConformance runs the conformance suite's authorization
// scenarios with mcproxy as the client under test. The suite starts an
// authorization server and a protected MCP server per scenario and runs
// testdata/oauthclient with the server's URL; that client configures
// mcproxy with it, starts `mcproxy serve --stdio`, and searches for and
// calls the server's tool through mcproxy's front. mcproxy meets the 401,
// signs in on its own, and opens the sign-in page with $BROWSER, which is
// oauthclient again, following the redirects as a signed-in user's
// browser does.
func TestOAuthConformance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the conformance suite takes a minute")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH, so the MCP conformance suite (npm @modelcontextprotocol/conformance) cannot run: install Node.js 20 and run npm ci")
	}
	conformance := testenv.Conformance(t)
	helper := oauthClient(t)
	total := 0
	for _, suite := range []string{"auth", "backcompat", "extensions"} {
		out := filepath.Join(t.TempDir(), suite)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, conformance[0], append(conformance[1:], "client", "--suite", suite, "--command", helper, "-o", out)...)
		cmd.Dir = t.TempDir() // the suite writes ./results otherwise
		cmd.Env = append(os.Environ(), "MCPROXY_BIN="+binary)
		summary, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("conformance --suite %s did not finish in 5 minutes:\n%s", suite, summary)
		}
		t.Logf("conformance --suite %s (exit %v):\n%s", suite, err, lastLines(string(summary), 25))

		seen := map[string]bool{}
		files, _ := filepath.Glob(filepath.Join(out, "auth", "*", "checks.json"))
		for _, f := range files {
			dir := filepath.Base(filepath.Dir(f))
			name := "auth/" + resultStamp.ReplaceAllString(dir, "")
			seen[name] = true
			t.Run(name, func(t *testing.T) {
				total += scenarioChecks(t, f)
			})
		}
		for _, want := range conformanceScenarios[suite] {
			if !seen[want] {
				t.Errorf("suite %s: scenario %s produced no results", suite, want)
			}
		}
		if len(seen) != len(conformanceScenarios[suite]) {
			t.Errorf("suite %s ran %d scenarios, want %d (%v): update conformanceScenarios", suite, len(seen),
				len(conformanceScenarios[suite]), slices.Sorted(func(yield func(string) bool) {
					for k := range seen {
						if !yield(k) {
							return
						}
					}
				}))
		}
	}
	t.Logf("conformance: %d checks passed", total)
}

var (
	oauthClientOnce sync.Once
	oauthClientPath string
	oauthClientErr  error
)

// oauthClient builds testdata/oauthclient once per test binary (next to
// the mcproxy binary TestMain built) and returns its path.
func oauthClient(t *testing.T) string {
	t.Helper()
	oauthClientOnce.Do(func() {
		oauthClientPath = filepath.Join(filepath.Dir(binary), "oauthclient")
		out, err := exec.Command("go", "build", "-o", oauthClientPath, "github.com/mcproxy/mcproxy/internal/e2e/testdata/oauthclient").CombinedOutput()
		if err != nil {
			oauthClientErr = fmt.Errorf("building oauthclient: %v\n%s", err, out)
		}
	})
	if oauthClientErr != nil {
		t.Fatal(oauthClientErr)
	}
	return oauthClientPath
}

// scenarioChecks reads a scenario's checks.json, fails t for each check
// that failed or warned (and when none passed, showing the client's
// stderr), and returns how many passed.
func scenarioChecks(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var checks []struct {
		ID, Status, Description, ErrorMessage string
	}
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("decoding %s: %v", file, err)
	}
	passed := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			passed++
		case "FAILURE", "WARNING":
			t.Errorf("check %s: %s: %s %s", c.ID, c.Status, c.Description, c.ErrorMessage)
		}
	}
	if passed == 0 {
		t.Errorf("no check passed")
	}
	if t.Failed() {
		stderr, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "stderr.txt"))
		t.Logf("client stderr:\n%s", lastLines(string(stderr), 40))
	}
	return passed
}

// resultStamp is the time the suite appends to a scenario's results directory.
var resultStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
