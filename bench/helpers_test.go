package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// runReport runs the profiler with args plus --out, fails the test unless it
// succeeds, and returns the report and its raw JSON.
func runReport(t *testing.T, args ...string) (Report, []byte) {
	t.Helper()
	out := t.TempDir()
	code, _, stderr := runMain(t, append(args, "--out", out)...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, raw
}

func mustWD(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
