package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthCommandLine checks mcproxy auth's answers that need no server:
// usage, unknown or stdio servers, and status of what is stored.
func TestAuthCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	conf := `{"mcpServers": {
		"local":  {"command": "true"},
		"hosted": {"url": "https://mcp.example.com/mcp?key=secret"},
		"static": {"url": "https://static.example.com/mcp", "headers": {"Authorization": "Bearer x"}}
	}, "data_dir": "` + filepath.Join(dir, "data") + `"}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		out, notIn string
	}{
		{"no subcommand", []string{"auth"}, exitUsage, "mcproxy auth login SERVER", ""},
		{"login without server", []string{"auth", "login", "--config", cfg}, exitUsage, "needs one SERVER", ""},
		{"unknown server", []string{"auth", "login", "nope", "--config", cfg}, exitUsage, "configured: hosted, local, static", ""},
		{"stdio server", []string{"auth", "logout", "local", "--config", cfg}, exitUsage, "only url servers sign in", ""},
		{"status", []string{"auth", "status", "--config", cfg}, exitOK, "hosted               https://mcp.example.com/mcp  not signed in", "secret"},
		{"status of a static header", []string{"auth", "status", "--config", cfg}, exitOK, "static Authorization header", "Bearer x"},
		{"logout when signed out", []string{"auth", "logout", "hosted", "--config", cfg}, exitOK, "Signed out of hosted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
			all := stdout.String() + stderr.String()
			if code != tc.code || !strings.Contains(all, tc.out) {
				t.Errorf("mcproxy %v: got exit %d, output %q; want exit %d and %q", tc.args, code, all, tc.code, tc.out)
			}
			if tc.notIn != "" && strings.Contains(all, tc.notIn) {
				t.Errorf("mcproxy %v: output %q shows %q", tc.args, all, tc.notIn)
			}
		})
	}
}
