package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// setupHome gives the test an empty HOME (Linux layout) holding the
// importer's Claude Desktop fixture, and returns its path and mcproxy's
// config path.
func setupHome(t *testing.T) (clientFile, cfgPath string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	clientFile = filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "importer", "testdata", "claude_desktop_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(clientFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clientFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return clientFile, filepath.Join(home, ".mcproxy", "config.json")
}

func TestSetupAndUndo(t *testing.T) {
	clientFile, cfgPath := setupHome(t)
	orig, _ := os.ReadFile(clientFile)

	code, out, errOut := runCLI(t, "setup", "claude-desktop", "--binary", "/usr/local/bin/mcproxy")
	if code != exitOK {
		t.Fatalf("setup: exit %d\n%s%s", code, out, errOut)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("mcproxy's config after setup: %v", err)
	}
	if len(cfg.MCPServers) != 2 || cfg.MCPServers["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_fixture" {
		t.Errorf("imported servers: got %+v, want filesystem and github with its env", cfg.MCPServers)
	}
	now, _ := os.ReadFile(clientFile)
	for _, want := range []string{`"mcproxy"`, `"/usr/local/bin/mcproxy"`, `"--stdio"`, cfgPath, `"globalShortcut": "Alt+Space"`} {
		if !strings.Contains(string(now), want) {
			t.Errorf("client file after setup lacks %s:\n%s", want, now)
		}
	}
	if strings.Contains(string(now), "server-github") {
		t.Errorf("client file still launches its own servers:\n%s", now)
	}
	if !strings.Contains(out, "globalShortcut: not about MCP servers, ignored") {
		t.Errorf("setup output lacks the note about globalShortcut:\n%s", out)
	}

	// A second setup keeps the first backup and imports nothing new.
	if code, out, errOut := runCLI(t, "setup", "claude-desktop", "--binary", "/usr/local/bin/mcproxy"); code != exitOK {
		t.Fatalf("second setup: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "setup", "claude-desktop", "--undo"); code != exitOK {
		t.Fatalf("undo: exit %d\n%s%s", code, out, errOut)
	}
	back, _ := os.ReadFile(clientFile)
	if !bytes.Equal(back, orig) {
		t.Errorf("after --undo: got\n%s\nwant the original\n%s", back, orig)
	}
	if code, _, errOut := runCLI(t, "setup", "claude-desktop", "--undo"); code != exitError || !strings.Contains(errOut, "no backup") {
		t.Errorf("second undo: got exit %d %q, want an error saying there is no backup", code, errOut)
	}
}

func TestAddRemoveImportClash(t *testing.T) {
	clientFile, cfgPath := setupHome(t)
	if code, out, errOut := runCLI(t, "add", "github", "--env", "TOKEN=${GH_TOKEN}", "--", "gh-mcp", "--read-only"); code != exitOK {
		t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "add", "remote", "https://mcp.example.com/mcp", "--header", "Authorization=Bearer x"); code != exitOK {
		t.Fatalf("add url: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "add", "remote", "https://other.example.com/mcp"); code != exitError || !strings.Contains(errOut, `already has a server named "remote"`) {
		t.Errorf("add twice: got %d %q", code, errOut)
	}
	t.Setenv("GH_TOKEN", "t0ken")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if gh := cfg.MCPServers["github"]; gh.Command != "gh-mcp" || gh.Args[0] != "--read-only" || gh.Env["TOKEN"] != "t0ken" {
		t.Errorf("github after add: got %+v", gh)
	}
	if r := cfg.MCPServers["remote"]; r.URL != "https://mcp.example.com/mcp" || r.Headers["Authorization"] != "Bearer x" {
		t.Errorf("remote after add: got %+v", r)
	}

	// The client's github differs from the one added: a clash, reported,
	// and mcproxy's own entry kept.
	code, out, errOut := runCLI(t, "import", clientFile)
	if code != exitOK || !strings.Contains(out, `clash: "github"`) || !strings.Contains(out, "added: filesystem") || !strings.Contains(out, "backup: ") {
		t.Errorf("import: exit %d\n%s%s", code, out, errOut)
	}
	cfg, _ = config.Load(cfgPath)
	if cfg.MCPServers["github"].Command != "gh-mcp" {
		t.Errorf("import replaced mcproxy's own github: %+v", cfg.MCPServers["github"])
	}
	// setup refuses to take the client's servers away while one clashes.
	if code, _, errOut := runCLI(t, "setup", "claude-desktop"); code != exitError || !strings.Contains(errOut, "settle those first") {
		t.Errorf("setup with a clash: got %d %q", code, errOut)
	}

	if code, out, errOut := runCLI(t, "remove", "github"); code != exitOK {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "remove", "github"); code != exitError || !strings.Contains(errOut, `no server "github"`) {
		t.Errorf("remove twice: got %d %q", code, errOut)
	}
	cfg, _ = config.Load(cfgPath)
	if _, ok := cfg.MCPServers["github"]; ok || len(cfg.MCPServers) != 2 {
		t.Errorf("after remove: got %v", cfg.MCPServers)
	}
}

func TestImportPromptsForInputs(t *testing.T) {
	_, cfgPath := setupHome(t)
	src := filepath.Join("..", "..", "internal", "importer", "testdata", "vscode_mcp.json")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"import", "--workspace", t.TempDir(), src}, strings.NewReader("pplx-typed\n"), &out, &errOut)
	if code != exitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "Perplexity API Key") {
		t.Errorf("prompt: got %q, want the input's description", errOut.String())
	}
	t.Setenv("HOME", "/home/x")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.MCPServers["perplexity"].Env["PERPLEXITY_API_KEY"]; got != "pplx-typed" {
		t.Errorf("input value: got %q, want the typed answer", got)
	}
	if info, _ := os.Stat(cfgPath); info.Mode().Perm() != 0o600 {
		t.Errorf("config mode: got %v, want 0600 (it may hold secrets)", info.Mode().Perm())
	}
}

// VS Code's dialect through setup and --undo: the workspace's
// .vscode/mcp.json (comments, inputs, servers) is imported, pointed at
// mcproxy with "type": "stdio", and put back byte for byte.
func TestSetupVSCodeWorkspace(t *testing.T) {
	_, cfgPath := setupHome(t)
	ws := t.TempDir()
	orig, err := os.ReadFile(filepath.Join("..", "..", "internal", "importer", "testdata", "vscode_mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	clientFile := filepath.Join(ws, ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(clientFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clientFile, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "setup", "vscode", "--workspace", ws, "--input", "perplexity-key=k", "--binary", "/opt/mcproxy")
	if code != exitOK {
		t.Fatalf("setup: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "comments and trailing commas") {
		t.Errorf("setup did not say the comments are dropped:\n%s", out)
	}
	now, _ := os.ReadFile(clientFile)
	for _, want := range []string{`"servers"`, `"type": "stdio"`, `"/opt/mcproxy"`, `"inputs"`} {
		if !strings.Contains(string(now), want) {
			t.Errorf("client file lacks %s:\n%s", want, now)
		}
	}
	t.Setenv("HOME", "/home/x")
	cfg, err := config.Load(cfgPath)
	if err != nil || len(cfg.MCPServers) != 3 || cfg.MCPServers["fetch"].Cwd != ws {
		t.Errorf("mcproxy's config: %v %+v", err, cfg)
	}
	if code, out, errOut := runCLI(t, "setup", "vscode", "--workspace", ws, "--undo"); code != exitOK {
		t.Fatalf("undo: exit %d\n%s%s", code, out, errOut)
	}
	if back, _ := os.ReadFile(clientFile); !bytes.Equal(back, orig) {
		t.Errorf("after --undo: got\n%s\nwant the original", back)
	}
}
