package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes cfg as a config file in a temporary directory.
func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `mcproxy sessions` reads data_dir, tokenizer and noa only: a ${VAR} of a
// server's headers unset in this shell does not stop it, one in data_dir
// does, with the usual message.
func TestSessionsIgnoresUnsetServerVariables(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, map[string]any{
		"data_dir": dir,
		"mcpServers": map[string]any{"api": map[string]any{
			"url": "https://api.example/mcp?key=${MCPROXY_TEST_UNSET_A}", "headers": map[string]any{"Authorization": "Bearer ${MCPROXY_TEST_UNSET_B}"},
		}},
	})
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"sessions", "list", "--config", path}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("sessions list with unset server variables: exit %d, %s", code, stderr.String())
	}
	path = writeConfig(t, map[string]any{"data_dir": "${MCPROXY_TEST_UNSET_DIR}", "mcpServers": map[string]any{}})
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"sessions", "list", "--config", path}, strings.NewReader(""), &stdout, &stderr); code == exitOK || !strings.Contains(stderr.String(), "MCPROXY_TEST_UNSET_DIR") {
		t.Fatalf("sessions list with data_dir unset: exit %d, %q; want an error naming the variable", code, stderr.String())
	}
}

// serve refuses to listen beyond loopback without auth_token, before it
// binds anything.
func TestServeRefusesOpenBindingWithoutToken(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		path := writeConfig(t, map[string]any{"listen": listen, "data_dir": t.TempDir(), "mcpServers": map[string]any{}})
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"serve", "--config", path}, strings.NewReader(""), &stdout, &stderr)
		if code != exitError || !strings.Contains(stderr.String(), "auth_token") {
			t.Errorf("listen %s without auth_token: exit %d, %q; want a refusal naming auth_token", listen, code, stderr.String())
		}
	}
}
