package gatewaytest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Without the SDKs in node_modules a test that runs them is skipped with
// the fix (npm ci); with MCPROXY_REQUIRE_NPM set (scripts/test) it fails.
func TestMissingSDKsSkipUnlessRequired(t *testing.T) {
	if os.Getenv("GATEWAYTEST_SDK_CHILD") != "" {
		requireSDKs(t, t.TempDir())
		return
	}
	for _, require := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingSDKsSkipUnlessRequired$", "-test.v")
		cmd.Env = append(os.Environ(), "GATEWAYTEST_SDK_CHILD=1", requireNPMEnv+"="+require)
		out, err := cmd.CombinedOutput()
		switch {
		case require == "" && (err != nil || !strings.Contains(string(out), "--- SKIP") || !strings.Contains(string(out), "run npm ci")):
			t.Errorf("without %s: want a skip that says to run npm ci, got (%v):\n%s", requireNPMEnv, err, out)
		case require != "" && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), "run npm ci")):
			t.Errorf("with %s=1: want a failure that says to run npm ci, got (%v):\n%s", requireNPMEnv, err, out)
		}
	}
}
