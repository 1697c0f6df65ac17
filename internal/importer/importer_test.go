package importer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/config"
)

func off() *bool { b := false; return &b }

// Each fixture is written from its client's documented format; the test
// pins what mcproxy makes of it, and that the result loads as mcproxy's
// own config.
func TestParseClientFiles(t *testing.T) {
	prompt := func(in Input) (string, error) {
		if in.ID != "perplexity-key" || !in.Password || in.Description != "Perplexity API Key" {
			return "", errors.New("unexpected input " + in.ID)
		}
		return "pplx-$ecret", nil
	}
	tests := []struct {
		file  string
		want  map[string]config.ServerConfig
		notes []string
	}{
		{
			file: "claude_desktop_config.json",
			want: map[string]config.ServerConfig{
				"filesystem": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/ann/Desktop", "/Users/ann/Downloads"}},
				"github":     {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_fixture"}},
			},
			notes: []string{"globalShortcut: not about MCP servers, ignored"},
		},
		{
			file: "claude.json",
			want: map[string]config.ServerConfig{
				"sentry":   {URL: "https://mcp.sentry.dev/mcp", Headers: map[string]string{"Authorization": "Bearer ${SENTRY_TOKEN}"}},
				"memory":   {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}, Env: map[string]string{"MEMORY_FILE_PATH": "${MEMORY_DIR:-/tmp}/memory.json"}},
				"postgres": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"}},
			},
			notes: []string{
				"numStartups, theme, hasCompletedOnboarding: not about MCP servers, ignored",
				"projects: servers of 1 other project(s) not imported (run the import from a project's folder to take its servers)",
			},
		},
		{
			file: "cursor_mcp.json",
			want: map[string]config.ServerConfig{
				"brave-search": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-brave-search"}, Env: map[string]string{"BRAVE_API_KEY": "${BRAVE_API_KEY}"}},
				"docs":         {Command: "node", Args: []string{"/home/ann/shop/tools/docs-server.js"}},
				"userjot":      {URL: "https://api.example.com/v1/mcp", Headers: map[string]string{"Authorization": "Bearer ${USERJOT_API_TOKEN}"}},
			},
			notes: []string{`mcpServers.docs.envFile: not read; copy the variables the server needs into "env" (values may be ${VAR} references)`},
		},
		{
			file: "vscode_mcp.json",
			want: map[string]config.ServerConfig{
				"perplexity": {Command: "npx", Args: []string{"-y", "server-perplexity-ask"}, Env: map[string]string{"PERPLEXITY_API_KEY": "pplx-$$ecret"}},
				"fetch":      {Command: "uvx", Args: []string{"mcp-server-fetch"}, Cwd: "/home/ann/shop", Env: map[string]string{"HOME_DIR": "${HOME}"}},
				"github":     {URL: "https://api.githubcopilot.com/mcp/"},
			},
			notes: []string{"servers.fetch.dev: ignored (VS Code's development mode)"},
		},
		{
			file: "windsurf_mcp_config.json",
			want: map[string]config.ServerConfig{
				"tidewave": {URL: "http://localhost:4000/tidewave/mcp"},
				"git":      {Command: "uvx", Args: []string{"mcp-server-git"}, Env: map[string]string{}, Enabled: off()},
			},
		},
		{
			file: "cline_mcp_settings.json",
			want: map[string]config.ServerConfig{
				"weather": {Command: "node", Args: []string{"/home/ann/mcp/weather/build/index.js"}, Env: map[string]string{"OPENWEATHER_API_KEY": "owm_fixture"}},
			},
			notes: []string{
				"mcpServers.weather.autoApprove: ignored (mcproxy has no approval list; your client still asks before each call)",
				`mcpServers.weather.timeout: ignored (set "call_timeout" (e.g. "60s") to bound each call)`,
				"mcpServers.weather.transportType: ignored (mcproxy tells stdio from a URL by itself)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Parse(data, Options{Workspace: "/home/ann/shop", Prompt: prompt})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]config.ServerConfig{}
			for _, s := range r.Servers {
				got[s.Name] = s.Config
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.notes, r.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			// The merged file is a valid mcproxy config, its references
			// expanded at load.
			m, err := Merge(nil, r.Servers)
			if err != nil {
				t.Fatal(err)
			}
			env := func(k string) (string, bool) { return "env-" + k, true }
			cfg, err := config.Parse(m.Data, env)
			if err != nil {
				t.Fatalf("merged config does not load: %v\n%s", err, m.Data)
			}
			if len(cfg.MCPServers) != len(tc.want) {
				t.Errorf("got %d servers in the merged config, want %d", len(cfg.MCPServers), len(tc.want))
			}
			if tc.file == "vscode_mcp.json" && cfg.MCPServers["perplexity"].Env["PERPLEXITY_API_KEY"] != "pplx-$ecret" {
				t.Errorf("got input value %q after load, want the answer verbatim", cfg.MCPServers["perplexity"].Env["PERPLEXITY_API_KEY"])
			}
		})
	}
}

func TestParseNeedsWhatTheClientWouldAsk(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "vscode_mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data, Options{Workspace: "/w"})
	if err == nil || !strings.Contains(err.Error(), "--input perplexity-key=VALUE") {
		t.Errorf("got %v, want an error asking for --input perplexity-key=VALUE", err)
	}
	_, err = Parse(data, Options{Prompt: func(Input) (string, error) { return "k", nil }})
	if err == nil || !strings.Contains(err.Error(), "--workspace DIR") {
		t.Errorf("got %v, want an error asking for --workspace", err)
	}
}

func TestMergeKeepsTheConfigAndReportsClashes(t *testing.T) {
	orig := []byte(`{
  "listen": "127.0.0.1:9000",
  "mcpServers": {
    "github": {"command": "gh-mcp"},
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
  },
  "noa": {"enabled": false}
}`)
	m, err := Merge(orig, []Server{
		{Name: "memory", Config: config.ServerConfig{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}}},
		{Name: "github", Config: config.ServerConfig{Command: "npx"}},
		{Name: "fetch", Config: config.ServerConfig{Command: "uvx", Args: []string{"mcp-server-fetch"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"fetch"}, m.Added); diff != "" {
		t.Errorf("added (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"github"}, m.Clashes); diff != "" {
		t.Errorf("clashes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"memory"}, m.Same); diff != "" {
		t.Errorf("same (-want +got):\n%s", diff)
	}
	cfg, err := config.Parse(m.Data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9000" || cfg.Noa.IsEnabled() || cfg.MCPServers["github"].Command != "gh-mcp" {
		t.Errorf("merge changed what it should keep:\n%s", m.Data)
	}
	// Key order is the file's: listen, mcpServers, noa.
	if i, j := strings.Index(string(m.Data), `"listen"`), strings.Index(string(m.Data), `"noa"`); i > j {
		t.Errorf("key order changed:\n%s", m.Data)
	}
	out, err := Remove(m.Data, "fetch")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "fetch") {
		t.Errorf("fetch still there after Remove:\n%s", out)
	}
	if _, err := Remove(out, "nope"); err == nil || !strings.Contains(err.Error(), `no server "nope"`) {
		t.Errorf("got %v, want no server \"nope\"", err)
	}
}

func TestPointAtKeepsOtherKeys(t *testing.T) {
	entry := config.ServerConfig{Command: "/usr/local/bin/mcproxy", Args: []string{"serve", "--stdio"}}
	for _, file := range []string{"claude_desktop_config.json", "vscode_mcp.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		out, err := PointAt(data, entry)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Parse(out, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Servers) != 0 {
			t.Errorf("%s: got servers %v after PointAt, want only the (skipped) mcproxy entry", file, r.Servers)
		}
		want := "globalShortcut"
		if file == "vscode_mcp.json" {
			want = `"type": "stdio"`
		}
		if !strings.Contains(string(out), want) {
			t.Errorf("%s: %q missing after PointAt:\n%s", file, want, out)
		}
	}
}

func TestClientPath(t *testing.T) {
	tests := []struct {
		client string
		env    Env
		want   string
	}{
		{"claude-desktop", Env{GOOS: "darwin", Home: "/Users/ann"}, "/Users/ann/Library/Application Support/Claude/claude_desktop_config.json"},
		{"claude-desktop", Env{GOOS: "linux", Home: "/home/ann"}, "/home/ann/.config/Claude/claude_desktop_config.json"},
		{"claude-desktop", Env{GOOS: "windows", AppData: "/c/Users/ann/AppData/Roaming"}, "/c/Users/ann/AppData/Roaming/Claude/claude_desktop_config.json"},
		{"claude-code", Env{GOOS: "linux", Home: "/home/ann"}, "/home/ann/.claude.json"},
		{"cursor", Env{GOOS: "darwin", Home: "/Users/ann"}, "/Users/ann/.cursor/mcp.json"},
		{"windsurf", Env{GOOS: "linux", Home: "/home/ann"}, "/home/ann/.codeium/windsurf/mcp_config.json"},
		{"vscode", Env{GOOS: "linux", Home: "/home/ann", XDGConfig: "/x"}, "/x/Code/User/mcp.json"},
	}
	for _, tc := range tests {
		got, err := ClientPath(tc.client, tc.env)
		if err != nil || got != tc.want {
			t.Errorf("%s on %s: got %q, %v, want %q", tc.client, tc.env.GOOS, got, err, tc.want)
		}
	}
	if _, err := ClientPath("emacs", Env{}); err == nil {
		t.Error("got no error for an unknown client")
	}
}
