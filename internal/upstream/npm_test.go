//go:build unix

package upstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// TestEverythingTransports connects to the npm reference server-everything
// over each transport and round-trips its echo tool.
func TestEverythingTransports(t *testing.T) {
	cases := []struct {
		name string
		sc   func(t *testing.T) config.ServerConfig
	}{
		{config.TransportStdio, func(t *testing.T) config.ServerConfig {
			return config.ServerConfig{Command: testenv.NodeBin(t, "mcp-server-everything")}
		}},
		{config.TransportStreamableHTTP, func(t *testing.T) config.ServerConfig {
			return config.ServerConfig{URL: startHTTPEverything(t, "streamableHttp") + "/mcp"}
		}},
		{config.TransportSSE, func(t *testing.T) config.ServerConfig {
			return config.ServerConfig{URL: startHTTPEverything(t, "sse") + "/sse", Transport: "sse"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var changed []string
			m := startManager(t, map[string]config.ServerConfig{"everything": tc.sc(t)}, Options{
				OnToolsChanged: func(server string, tools []config.Tool) { changed = append(changed, server) },
			})
			st := statusOf(t, m, "everything")
			if st.State != StateReady || st.Transport != tc.name {
				t.Fatalf("got status %+v, want ready over %s", st, tc.name)
			}
			if st.Tools == 0 {
				t.Errorf("got 0 tools in status, want server-everything's tools")
			}
			tools := m.Tools()
			if len(tools) != st.Tools {
				t.Errorf("got %d tools from Tools, want %d as Status says", len(tools), st.Tools)
			}
			i := slices.IndexFunc(tools, func(t config.Tool) bool { return t.ID == "everything:echo" })
			if i < 0 {
				t.Fatalf("got tools %v, want everything:echo among them", toolNames(tools))
			}
			if !json.Valid(tools[i].Schema) || !strings.Contains(string(tools[i].Schema), `"message"`) {
				t.Errorf("got echo schema %s, want the upstream's JSON schema with a message property", tools[i].Schema)
			}
			if got := text(call(t, m, "everything", "echo", map[string]any{"message": "hello " + tc.name})); got != "Echo: hello "+tc.name {
				t.Errorf("got echo %q, want %q", got, "Echo: hello "+tc.name)
			}
			if len(changed) != 1 || changed[0] != "everything" {
				t.Errorf("got OnToolsChanged calls %v, want one for everything", changed)
			}
		})
	}
}

// TestFilesystemAndMemory runs two npm reference servers side by side and
// round-trips a file and a knowledge-graph entity.
func TestFilesystemAndMemory(t *testing.T) {
	root := t.TempDir()
	// macOS and some CI images put temp dirs behind symlinks; the filesystem
	// server checks resolved paths.
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	memDir := t.TempDir()
	m := startManager(t, map[string]config.ServerConfig{
		"fs":     {Command: testenv.NodeBin(t, "mcp-server-filesystem"), Args: []string{root}},
		"memory": {Command: testenv.NodeBin(t, "mcp-server-memory"), Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(memDir, "memory.jsonl")}},
	}, Options{})

	for _, st := range m.Status() {
		if st.State != StateReady {
			t.Fatalf("got status %+v, want ready", st)
		}
	}
	file := filepath.Join(root, "note.txt")
	call(t, m, "fs", "write_file", map[string]any{"path": file, "content": "hello from mcproxy"})
	if got := text(call(t, m, "fs", "read_text_file", map[string]any{"path": file})); !strings.Contains(got, "hello from mcproxy") {
		t.Errorf("got read_text_file %q, want the written content", got)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello from mcproxy" {
		t.Errorf("got file %q (%v), want the written content on disk", b, err)
	}

	call(t, m, "memory", "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "mcproxy", "entityType": "project", "observations": []any{"fronts MCP servers"}},
	}})
	if got := text(call(t, m, "memory", "read_graph", nil)); !strings.Contains(got, "mcproxy") || !strings.Contains(got, "fronts MCP servers") {
		t.Errorf("got read_graph %q, want the created entity", got)
	}

	// A tool error is a result, not a Go error.
	res := call(t, m, "fs", "read_text_file", map[string]any{"path": filepath.Join(root, "missing.txt")})
	if !res.IsError {
		t.Errorf("got IsError false reading a missing file, want a tool error result: %q", text(res))
	}
}

// TestStdioEnvironment asks server-everything's get-env what each stdio
// server sees: a secret in mcproxy's own environment and one given to
// another server's env reach nobody; a server's own env and the names its
// inherit_env lists do reach it; the minimal set (PATH, which its node
// shebang needs) is always there.
func TestStdioEnvironment(t *testing.T) {
	t.Setenv("MCPROXY_TEST_PROXY_SECRET", "proxy-secret")
	t.Setenv("MCPROXY_TEST_SHARED", "shared-value")
	t.Setenv("LC_MCPROXY_TEST", "locale")
	bin := testenv.NodeBin(t, "mcp-server-everything")
	m := startManager(t, map[string]config.ServerConfig{
		"a":   {Command: bin, Env: map[string]string{"A_TOKEN": "a-secret"}},
		"b":   {Command: bin, InheritEnv: config.InheritEnv{Names: []string{"MCPROXY_TEST_SHARED"}}},
		"all": {Command: bin, InheritEnv: config.InheritEnv{All: true}},
	}, Options{})
	envOf := func(server string) map[string]string {
		var env map[string]string
		if err := json.Unmarshal([]byte(text(call(t, m, server, "get-env", nil))), &env); err != nil {
			t.Fatalf("%s: get-env: %v", server, err)
		}
		return env
	}
	tests := []struct {
		server      string
		want, unset []string
	}{
		{"a", []string{"PATH", "HOME", "LC_MCPROXY_TEST", "A_TOKEN"}, []string{"MCPROXY_TEST_PROXY_SECRET", "MCPROXY_TEST_SHARED"}},
		{"b", []string{"PATH", "MCPROXY_TEST_SHARED"}, []string{"MCPROXY_TEST_PROXY_SECRET", "A_TOKEN"}},
		{"all", []string{"PATH", "MCPROXY_TEST_SHARED", "MCPROXY_TEST_PROXY_SECRET"}, []string{"A_TOKEN"}},
	}
	for _, tc := range tests {
		env := envOf(tc.server)
		for _, k := range tc.want {
			if _, ok := env[k]; !ok {
				t.Errorf("%s: %s is not in its environment, want it", tc.server, k)
			}
		}
		for _, k := range tc.unset {
			if v, ok := env[k]; ok {
				t.Errorf("%s: got %s=%q in its environment, want it absent", tc.server, k, v)
			}
		}
	}
}
