package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// conformanceNext is the conformance suite release that tests the
// 2026-07-28 revision, installed beside the pinned 0.1.13 under an npm
// alias (package.json); it needs Node 22 (testenv.Node22).
const (
	conformanceNextPkg     = "conformance-next"
	conformanceNextVersion = "0.2.0-alpha.12"
)

// clientScenarios2026 are the client scenarios the suite's frozen
// requirements for 2026-07-28 (requirements/2026-07-28.yaml, "client")
// score: every one applies to mcproxy as the client of its upstreams. The
// extensions (client credentials, enterprise-managed authorization, DPoP,
// workload identity) are not scored, nor is
// json-schema-2020-12-preservation (added after the revision shipped).
var clientScenarios2026 = []string{
	"tools_call", "request-metadata",
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/resource-mismatch", "auth/offline-access-scope",
	"auth/offline-access-not-supported", "auth/authorization-server-migration",
	"auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer",
	"auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch",
	"sep-2322-client-request-state", "http-standard-headers", "http-custom-headers",
	"http-invalid-tool-headers", "json-schema-ref-no-deref",
}

// TestClientConformance2026 runs the 2026-07-28 client scenarios of the
// conformance suite's newest release with mcproxy as the client under
// test, one subtest a scenario; every check must pass. The suite starts
// the scenario's servers and runs testdata/oauthclient with the server's
// URL, which configures mcproxy with it (an oauth block for auth/
// scenarios, direct mode with the names kept for the others), starts
// `mcproxy serve --stdio` and, as a real MCP client of mcproxy's front,
// does what the scenario asks. The scenarios run one at a time: run
// together on a loaded machine, the suite's servers answer mcproxy's
// server/discover probe after it has given up.
func TestClientConformance2026(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the conformance suite takes about a minute")
	}
	node := testenv.Node22(t)
	suite := filepath.Join(testenv.NodePackage(t, conformanceNextPkg, conformanceNextVersion), "dist", "index.js")
	helper := oauthClient(t)
	// The scenarios run in parallel (each suite's server listens on a port
	// of its own, each helper has its own data dir); the total is logged
	// once they have all finished.
	var mu sync.Mutex
	total := 0
	t.Cleanup(func() {
		t.Logf("conformance %s, 2026-07-28 client scenarios: %d checks passed", conformanceNextVersion, total)
	})
	for _, scenario := range clientScenarios2026 {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "client", "--scenario", scenario,
				"--spec-version", "2026-07-28", "--command", helper, "-o", out)
			cmd.Dir = t.TempDir() // the suite writes ./results otherwise
			cmd.Env = append(os.Environ(), "MCPROXY_BIN="+binary)
			summary, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("conformance --scenario %s did not finish in 2 minutes:\n%s", scenario, summary)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
			more, _ := filepath.Glob(filepath.Join(out, "*", "*", "checks.json"))
			files = append(files, more...)
			if len(files) != 1 {
				t.Fatalf("got %d checks.json files, want 1 (exit %v):\n%s", len(files), err, lastLines(string(summary), 25))
			}
			n := scenarioChecks(t, files[0])
			if t.Failed() {
				t.Logf("suite (exit %v):\n%s", err, lastLines(string(summary), 15))
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
}
