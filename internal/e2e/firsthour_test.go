package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unsetVar is a variable no test machine sets: the bad server's key.
const unsetVar = "MCPROXY_E2E_NEVER_SET_KEY"

// TestOneBadServerServesTheRest: a server whose entry refers to an unset
// variable is set aside, visibly, and the other serves (issue 30). Before,
// serve refused to start at all.
func TestOneBadServerServesTheRest(t *testing.T) {
	if _, ok := os.LookupEnv(unsetVar); ok {
		t.Fatalf("%s is set in this environment; the test needs it unset", unsetVar)
	}
	good := newGoUpstream(t, "good")
	dir := t.TempDir()
	addr := freeAddr(t)
	servers := map[string]any{
		"good": map[string]any{"url": good.url()},
		"ctx7": map[string]any{"url": "https://mcp.context7.example/mcp", "headers": map[string]any{"Authorization": "Bearer ${" + unsetVar + "}"}},
	}
	cfg := map[string]any{"mcpServers": servers, "listen": addr, "data_dir": filepath.Join(dir, "data"), "log_level": "debug"}
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), cfg)
	// The config's listen, which `servers` finds it at.
	p := startProc(t, "mcproxy serve", exec.Command(binary, "serve", "--config", config))
	waitListening(t, addr, p)
	c := startHTTP(t, "http://"+addr+"/mcp")
	initialize(t, c)

	if got := proxied(t, c, "good:echo", map[string]any{"message": "hi"}); got != "good says hi" {
		t.Fatalf("call_tool good:echo: got %q, want %q", got, "good says hi")
	}
	// The reason names the field and the variable and says how to fix it.
	reason := "mcpServers.ctx7.headers.Authorization: ${" + unsetVar + "} is not set: export " + unsetVar
	found := text(callTool(t, c, "retrieve_tools", map[string]any{"query": "echo a message"}))
	if !strings.Contains(found, "good:echo") {
		t.Errorf("retrieve_tools: got %q, want good:echo among the matches", found)
	}
	if !strings.Contains(found, "ctx7 (misconfigured: "+reason) {
		t.Errorf("retrieve_tools: got %q, want the not-connected line to hold %q", found, "ctx7 (misconfigured: "+reason)
	}
	res := callTool(t, c, "call_tool", map[string]any{"name": "ctx7:resolve", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "misconfigured") || !strings.Contains(text(res), reason) {
		t.Errorf("call_tool ctx7:resolve: got %q, want a tool error saying it is misconfigured and why", text(res))
	}

	code, out, errOut := runBinary(t, time.Minute, "servers", "--config", config)
	if code != 1 {
		t.Errorf("servers: got exit %d, want 1 (a server is not working)\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "mcproxy ") || strings.Contains(out, "not running") {
		t.Errorf("servers: got %q, want the running mcproxy's report", out)
	}
	if line := serverLine(out, "good"); !strings.Contains(line, " ready ") {
		t.Errorf("servers: got good's line %q, want it ready\n%s", line, out)
	}
	if line := serverLine(out, "ctx7"); !strings.Contains(line, " misconfigured ") || !strings.Contains(line, reason) {
		t.Errorf("servers: got ctx7's line %q, want it misconfigured with %q", line, reason)
	}

	defer func() {
		if t.Failed() {
			t.Logf("the last servers output:\n%s", out)
		}
	}()
	// A reload whose only problem is one server's entry applies the rest.
	other := newGoUpstream(t, "other")
	servers["other"] = map[string]any{"url": other.url()}
	writeConfigFile(t, config, cfg)
	waitFor(t, time.Minute, "the reload to start other", func() bool {
		_, out, _ = runBinary(t, time.Minute, "servers", "--config", config)
		return strings.Contains(serverLine(out, "other"), " ready ")
	})
	if got := proxied(t, c, "other:echo", map[string]any{"message": "yo"}); got != "other says yo" {
		t.Errorf("call_tool other:echo after the reload: got %q, want %q", got, "other says yo")
	}
	if logs := p.output(); strings.Contains(logs, "config change refused") {
		t.Errorf("the reload was refused; logs:\n%s", logs)
	}
}

// serverLine is the line of `mcproxy servers` output about server, or "".
func serverLine(out, server string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, server+" ") {
			return line
		}
	}
	return ""
}

// TestStatusFindsListenFlag: status and servers reach an mcproxy started
// with --listen, which the config's listen does not name, by themselves
// and with --listen or --addr (issue 30: "flag provided but not defined").
func TestStatusFindsListenFlag(t *testing.T) {
	good := newGoUpstream(t, "good")
	dir := t.TempDir()
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"good": map[string]any{"url": good.url()}},
		"listen":     freeAddr(t), // not where serveHTTP's --listen puts it
		"data_dir":   filepath.Join(dir, "data"),
	})
	base, _ := serveHTTP(t, config)
	addr := strings.TrimPrefix(base, "http://")
	// serveHTTP returns once the port takes connections, which may be
	// before the servers are ready.
	waitFor(t, time.Minute, "good ready", func() bool {
		_, out, _ := runBinary(t, time.Minute, "servers", "--config", config, "--listen", addr)
		return strings.Contains(serverLine(out, "good"), " ready ")
	})
	for _, args := range [][]string{
		{"servers", "--config", config},
		{"status", "--config", config},
		{"servers", "--config", config, "--listen", addr},
		{"status", "--config", config, "--addr", base + "/"},
	} {
		code, out, errOut := runBinary(t, time.Minute, args...)
		if code != 0 || !strings.Contains(out, " at "+addr+", up ") {
			t.Errorf("%v: got exit %d\n%s%s\nwant exit 0 and the report of the mcproxy at %s", args, code, out, errOut, addr)
		}
		if args[0] == "servers" && !strings.Contains(serverLine(out, "good"), " ready ") {
			t.Errorf("%v: got %q, want good ready", args, out)
		}
	}
}
