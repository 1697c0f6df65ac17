package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestNPXPackage(t *testing.T) {
	for args, want := range map[string][]string{
		"@modelcontextprotocol/server-memory": {"-y", "@modelcontextprotocol/server-memory"},
		"@scope/pkg":                          {"--yes", "@scope/pkg@1.2.3", "--flag"},
		"mcp-server-git":                      {"mcp-server-git@latest", "/tmp"},
		"@scope/other":                        {"-y", "-p", "@scope/other", "other-bin"},
		"x":                                   {"--package=x@2", "x-bin"},
		"":                                    {"-y"},
	} {
		if got := npxPackage(want); got != args {
			t.Errorf("npxPackage(%q) = %q, want %q", want, got, args)
		}
	}
}

// TestInstallingReadsNPXsCache: a server run by npx is installing until
// an install folder of npx's cache holds its package; other commands never
// are.
func TestInstallingReadsNPXsCache(t *testing.T) {
	cache := t.TempDir()
	sc := config.ServerConfig{Command: "npx", Args: []string{"-y", "@scope/srv"}, Env: map[string]string{"npm_config_cache": cache}}
	noEnv := func(string) string { return "" }
	if !installing(sc, noEnv) {
		t.Errorf("an empty cache: want installing")
	}
	folder := filepath.Join(cache, "_npx", "0123abcd")
	if err := os.MkdirAll(filepath.Join(folder, "node_modules", "@scope", "srv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "package.json"), []byte(`{"dependencies": {"@scope/srv": "^1.0.0"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !installing(sc, noEnv) {
		t.Errorf("a folder whose package is not installed yet (an install cut short): want installing")
	}
	if err := os.WriteFile(filepath.Join(folder, "node_modules", "@scope", "srv", "package.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if installing(sc, noEnv) {
		t.Errorf("the package installed: want not installing")
	}
	if installing(config.ServerConfig{Command: "node", Args: []string{"server.js"}}, noEnv) {
		t.Errorf("node: want never installing")
	}
	home := t.TempDir()
	if !installing(config.ServerConfig{Command: "/usr/bin/npx", Args: []string{"-y", "other"}}, func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}) {
		t.Errorf("npx with ~/.npm empty: want installing")
	}
}

// TestHalfInstalledHint: the shell's "not found" from npx, as a cache left
// half-installed makes it print on every start, gets the fix; other
// failures, and other commands, get nothing.
func TestHalfInstalledHint(t *testing.T) {
	npx := config.ServerConfig{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}
	got := halfInstalledHint(npx, "sh: 1: mcp-server-memory: not found")
	if !strings.Contains(got, "@modelcontextprotocol/server-memory") || !strings.Contains(got, "rm -rf ~/.npm/_npx") {
		t.Errorf("got %q, want the package and how to clear npx's cache", got)
	}
	if got := halfInstalledHint(npx, "Error: Cannot find module 'zod'"); got != "" {
		t.Errorf("another failure: got %q, want no hint", got)
	}
	if got := halfInstalledHint(config.ServerConfig{Command: "uv"}, "sh: 1: x: not found"); got != "" {
		t.Errorf("another command: got %q, want no hint", got)
	}
}
