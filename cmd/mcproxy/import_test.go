package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/importer"
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

// setup, then the client rewriting its file (as Claude Code does with
// numStartups and project trust), then --undo: the rewrite is kept, the
// client's servers come back and mcproxy's entry goes, for every client
// setup supports (issue 30). Without the rewrite, --undo gives the file
// back byte for byte.
func TestSetupUndoKeepsTheClientsChanges(t *testing.T) {
	fixtures := map[string]string{
		"claude-desktop": "claude_desktop_config.json",
		"claude-code":    "claude.json",
		"cursor":         "cursor_mcp.json",
		"vscode":         "vscode_mcp.json",
		"windsurf":       "windsurf_mcp_config.json",
	}
	for _, client := range importer.Clients {
		t.Run(client, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", "")
			ws := t.TempDir()
			clientFile, err := importer.ClientPath(client, importer.Env{GOOS: runtime.GOOS, Home: home, Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			orig, err := os.ReadFile(filepath.Join("..", "..", "internal", "importer", "testdata", fixtures[client]))
			if err != nil {
				t.Fatal(err)
			}
			write := func(data []byte) {
				if err := os.MkdirAll(filepath.Dir(clientFile), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(clientFile, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"setup", client, "--workspace", ws, "--input", "perplexity-key=k", "--binary", "/opt/mcproxy"}
			setup := func() {
				t.Helper()
				if code, out, errOut := runCLI(t, args...); code != exitOK {
					t.Fatalf("setup: exit %d\n%s%s", code, out, errOut)
				}
			}
			undo := func() string {
				t.Helper()
				code, out, errOut := runCLI(t, append(args[:4:4], "--undo")...)
				if code != exitOK {
					t.Fatalf("undo: exit %d\n%s%s", code, out, errOut)
				}
				return out
			}
			servers := func(data []byte) []importer.Server {
				t.Helper()
				r, err := importer.Parse(data, importer.Options{Workspace: ws, Prompt: func(importer.Input) (string, error) { return "k", nil }})
				if err != nil {
					t.Fatalf("parsing the client's file: %v\n%s", err, data)
				}
				return r.Servers
			}

			// Nothing changed since setup: the file comes back whole.
			write(orig)
			setup()
			undo()
			if back, _ := os.ReadFile(clientFile); !bytes.Equal(back, orig) {
				t.Fatalf("undo with nothing changed since setup: got\n%s\nwant the original byte for byte\n%s", back, orig)
			}

			// The client rewrites the whole file after setup.
			setup()
			now, _ := os.ReadFile(clientFile)
			var doc map[string]any
			if err := json.Unmarshal(now, &doc); err != nil {
				t.Fatalf("the client's file after setup: %v\n%s", err, now)
			}
			doc["numStartups"] = 99.0
			projects, _ := doc["projects"].(map[string]any)
			if projects == nil {
				projects = map[string]any{}
			}
			projects["/home/ann/new"] = map[string]any{"hasTrustDialogAccepted": true}
			doc["projects"] = projects
			rewritten, _ := json.MarshalIndent(doc, "", "  ")
			write(rewritten)

			out := undo()
			back, _ := os.ReadFile(clientFile)
			var got map[string]any
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatalf("after --undo: %v\n%s", err, back)
			}
			if got["numStartups"] != 99.0 {
				t.Errorf("after --undo: numStartups %v, want the client's 99 kept\n%s", got["numStartups"], back)
			}
			if p, _ := got["projects"].(map[string]any); p["/home/ann/new"] == nil {
				t.Errorf("after --undo: the project trusted since setup is gone\n%s", back)
			}
			if strings.Contains(string(back), "/opt/mcproxy") {
				t.Errorf("after --undo: mcproxy's entry is still there\n%s", back)
			}
			if diff := cmp.Diff(servers(orig), servers(back)); diff != "" {
				t.Errorf("after --undo: the client's servers (-before setup +after undo):\n%s", diff)
			}
			if !strings.Contains(out, "kept what the client changed since setup: numStartups, projects") {
				t.Errorf("undo's report: got %q, want it to name what it kept", out)
			}
		})
	}
}

// import folds the keys it ignores into one note, and notes only the
// unset variables the servers it adds need: not those of servers imported
// before, nor one with a default (issue 30).
func TestImportNotesOnce(t *testing.T) {
	setupHome(t)
	for _, k := range []string{"BRAVE_API_KEY", "USERJOT_API_TOKEN", "SENTRY_TOKEN", "MEMORY_DIR"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	testdata := filepath.Join("..", "..", "internal", "importer", "testdata")
	code, out, errOut := runCLI(t, "import", filepath.Join(testdata, "cursor_mcp.json"))
	if code != exitOK || !strings.Contains(out, "needed in mcproxy's environment: BRAVE_API_KEY, USERJOT_API_TOKEN\n") {
		t.Fatalf("import cursor: exit %d\n%s%s\nwant a note naming BRAVE_API_KEY and USERJOT_API_TOKEN", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "import", "--workspace", t.TempDir(), filepath.Join(testdata, "claude.json"))
	if code != exitOK {
		t.Fatalf("import claude.json: exit %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(out, "not about MCP servers"); n != 1 || !strings.Contains(out, "note: numStartups, theme, hasCompletedOnboarding: not about MCP servers, ignored\n") {
		t.Errorf("import claude.json: got %d notes about ignored keys, want them in one line:\n%s", n, out)
	}
	if !strings.Contains(out, "needed in mcproxy's environment: SENTRY_TOKEN\n") {
		t.Errorf("import claude.json: got\n%s\nwant the unset-variable note to name SENTRY_TOKEN alone (BRAVE_API_KEY came with cursor, MEMORY_DIR has a default)", out)
	}
}

// Each edit of mcproxy's config leaves a backup; only the newest
// keptBackups stay (issue 30: six config.json.*.bak piled up).
func TestBackupsDoNotPileUp(t *testing.T) {
	_, cfgPath := setupHome(t)
	var last string
	for i := range keptBackups + 3 {
		code, out, errOut := runCLI(t, "add", fmt.Sprintf("s%d", i), "--", "cmd")
		if code != exitOK {
			t.Fatalf("add s%d: exit %d\n%s%s", i, code, out, errOut)
		}
		if _, b, ok := strings.Cut(out, "backup: "); ok {
			last, _, _ = strings.Cut(b, "\n")
		}
	}
	backups, _ := filepath.Glob(cfgPath + ".*.bak")
	if len(backups) != keptBackups || !slices.Contains(backups, last) {
		t.Errorf("backups: got %v, want the newest %d, %s among them", backups, keptBackups, last)
	}
}
