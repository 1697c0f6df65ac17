package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// stdioProfileClient runs `serve --stdio --profile NAME` in-process and
// returns an initialized client of it.
func stdioProfileClient(t *testing.T, cfg map[string]any, args ...string) (*client.Client, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	cfg["data_dir"] = filepath.Join(dir, "data")
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	codec := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"serve", "--stdio", "--config", path}, args...), stdinR, stdoutW, stderr)
		stdoutW.Close()
		codec <- code
	}()
	c := client.NewClient(transport.NewIO(stdoutR, stdinW, io.NopCloser(strings.NewReader(""))))
	t.Cleanup(func() {
		stdinW.Close()
		select {
		case <-codec:
		case <-time.After(30 * time.Second):
			t.Errorf("serve --stdio did not exit\n%s", stderr.String())
		}
		cancel()
		c.Close()
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ictx, icancel := context.WithTimeout(ctx, 60*time.Second)
	defer icancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "profile-test", Version: "0"}
	if _, err := c.Initialize(ictx, init); err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, stderr.String())
	}
	return c, stderr
}

func profileConfig(t *testing.T) map[string]any {
	return map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
			"memory":     map[string]any{"command": testenv.NodeBin(t, "mcp-server-memory")},
		},
		"profiles": map[string]any{
			"echo": map[string]any{"tools": []string{"everything:echo"}, "mode": "direct"},
			"mem":  map[string]any{"servers": []string{"memory"}},
		},
	}
}

// serve --stdio --profile: the client sees exactly the profile's tools in
// tools/list (direct mode, the profile's own), and no prompt of a server
// outside it.
func TestServeStdioProfileDirect(t *testing.T) {
	c, stderr := stdioProfileClient(t, profileConfig(t), "--profile", "echo")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	names := listedOnceHolding(ctx, t, c, "everything__echo", stderr.String)
	for _, n := range names {
		if strings.HasPrefix(n, "memory__") || strings.HasPrefix(n, "everything__") && n != "everything__echo" {
			t.Errorf("tools/list holds %s, outside the profile (all: %v)", n, names)
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "everything__get-sum"
	req.Params.Arguments = map[string]any{"a": 1, "b": 2}
	res, err := c.CallTool(ctx, req)
	if err == nil && !res.IsError {
		t.Errorf("a call outside the profile succeeded: %+v", res)
	}
}

// In retrieve mode, call_tool on a tool outside the profile is "not
// found" with no hint, and retrieve_tools never offers it.
func TestServeStdioProfileRetrieve(t *testing.T) {
	c, stderr := stdioProfileClient(t, profileConfig(t), "--profile", "mem")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func(name string, args map[string]any) (string, bool) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err.Error(), true
		}
		var b strings.Builder
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	var got string
	eventually(t, "memory's tools to be indexed", 30*time.Second, func() bool {
		got, _ = call("retrieve_tools", map[string]any{"query": "create entities in the knowledge graph"})
		return strings.Contains(got, "memory:create_entities")
	}, stderr.String)
	if strings.Contains(got, "everything:") {
		t.Errorf("retrieve_tools offers a tool outside the profile:\n%s", got)
	}
	got, _ = call("retrieve_tools", map[string]any{"query": "echo a message back"})
	if strings.Contains(got, "everything:echo") {
		t.Errorf("retrieve_tools offers everything:echo to the mem profile:\n%s", got)
	}
	out, isErr := call("call_tool", map[string]any{"name": "everything:echo", "arguments": map[string]any{"message": "x"}})
	if !isErr || strings.Contains(out, "Echo: x") {
		t.Fatalf("call_tool outside the profile: %q (error %v)", out, isErr)
	}
	if !strings.Contains(strings.ToLower(out), "unknown") && !strings.Contains(strings.ToLower(out), "not found") && !strings.Contains(out, "no tool") {
		t.Errorf("the refusal is not a not-found: %q", out)
	}
	if strings.Contains(out, "profile") || strings.Contains(out, "hidden") {
		t.Errorf("the refusal hints that the tool exists: %q", out)
	}
	t.Logf("refusal: %s", out)
}

func TestServeProfileErrors(t *testing.T) {
	code, _, errOut := runCLI(t, "serve", "--profile", "x")
	if code != exitUsage || !strings.Contains(errOut, "--profile needs --stdio") {
		t.Errorf("serve --profile without --stdio: %d %q", code, errOut)
	}
	cfgPath, _ := tokensConfig(t)
	code, _, errOut = runCLI(t, "serve", "--stdio", "--profile", "nope", "--config", cfgPath)
	if code != exitError || !strings.Contains(errOut, "--profile nope: no such profile in the config (its profiles: desk, ro)") {
		t.Errorf("serve --stdio --profile nope: %d %q", code, errOut)
	}
}

// setup CLIENT --profile NAME writes a client entry that launches that
// profile; a profile the config lacks is refused before anything changes.
func TestSetupProfile(t *testing.T) {
	clientFile, cfgPath := setupHome(t)
	orig, _ := os.ReadFile(clientFile)
	code, _, errOut := runCLI(t, "setup", "claude-desktop", "--binary", "/usr/local/bin/mcproxy", "--profile", "desk")
	if code != exitError || !strings.Contains(errOut, "--profile desk") {
		t.Fatalf("setup --profile with no mcproxy config: %d %q", code, errOut)
	}
	if now, _ := os.ReadFile(clientFile); !slices.Equal(now, orig) {
		t.Fatal("a refused setup changed the client's file")
	}
	if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{"mcpServers": {"memory": {"command": "mcp-memory"}}, "profiles": {"desk": {"servers": ["memory"]}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "setup", "claude-desktop", "--binary", "/usr/local/bin/mcproxy", "--profile", "nope")
	if code != exitError || !strings.Contains(errOut, "no such profile in the config (its profiles: desk)") {
		t.Fatalf("setup --profile nope: %d %q", code, errOut)
	}
	code, out, errOut := runCLI(t, "setup", "claude-desktop", "--binary", "/usr/local/bin/mcproxy", "--profile", "desk")
	if code != exitOK {
		t.Fatalf("setup --profile desk: %d\n%s%s", code, out, errOut)
	}
	var got struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	data, _ := os.ReadFile(clientFile)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	e := got.MCPServers["mcproxy"]
	if want := []string{"serve", "--stdio", "--config", cfgPath, "--profile", "desk"}; e.Command != "/usr/local/bin/mcproxy" || !slices.Equal(e.Args, want) {
		t.Errorf("client entry %+v, want args %v", e, want)
	}
}

// listedOnceHolding polls tools/list until it holds want (the upstreams
// connect in the background) and returns the names it lists then.
func listedOnceHolding(ctx context.Context, t *testing.T, c *client.Client, want string, dump func() string) []string {
	t.Helper()
	var names []string
	eventually(t, "tools/list to hold "+want, 30*time.Second, func() bool {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return slices.Contains(names, want)
	}, dump)
	return names
}
