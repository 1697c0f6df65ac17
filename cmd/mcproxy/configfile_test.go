package main

import (
	"strings"
	"testing"
)

// A missing --config file is not answered with "pass --config"; the default
// path is, and both say how to start a config (issue 18).
func TestMissingConfigMessage(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	_, _, errOut := runCLI(t, "search", "x", "--config", "missing.json")
	if !strings.Contains(errOut, "no config file at missing.json (the --config path)") || strings.Contains(errOut, "pass --config") ||
		!strings.Contains(errOut, "mcproxy import") {
		t.Errorf("--config missing.json: got %q", errOut)
	}
	_, _, errOut = runCLI(t, "search", "x")
	if !strings.Contains(errOut, "or pass --config FILE") || !strings.Contains(errOut, "mcproxy add NAME") {
		t.Errorf("default path missing: got %q", errOut)
	}
}
