package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// badListen is a listen setting mcproxy refuses (not host:port), whose
// error quotes it: its password must not reach the model.
const badListen = "http://bob:hunter2@127.0.0.1:9/x"

// TestRefusedReloadReachesStdio: a user who reaches mcproxy only through an
// MCP client over stdio (no dashboard, no status command in view) learns
// of a refused change to the config file from what the model reads (issue
// 30): the error with its password masked, that the previous config still
// runs and how to fix it; in retrieve mode in every retrieve_tools answer,
// in direct mode in the first tool answer after the change. A reload that
// succeeds takes the line away.
func TestRefusedReloadReachesStdio(t *testing.T) {
	t.Parallel()
	checkNotice := func(t *testing.T, got, config string) {
		t.Helper()
		for _, want := range []string{"mcproxy refused the last change to its config file (", config, "listen", "still runs the previous config", "`mcproxy status`", "fixed and saved, mcproxy reloads it"} {
			if !strings.Contains(got, want) {
				t.Errorf("answer after a refused change: got %q, want it to contain %q", got, want)
			}
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("answer after a refused change: got %q, want the URL's password masked", got)
		}
	}
	setup := func(t *testing.T, mode string) (cfg map[string]any, config string, second string) {
		dir := t.TempDir()
		first := newGoUpstream(t, "obs")
		second = newGoUpstream(t, "obs2").url()
		cfg = map[string]any{
			"mcpServers": map[string]any{"obs": map[string]any{"url": first.url()}},
			"data_dir":   filepath.Join(dir, "data"),
			"mode":       mode,
			"log_level":  "debug",
		}
		return cfg, writeConfigFile(t, filepath.Join(dir, "config.json"), cfg), second
	}
	// fix removes the refused setting and adds a second server, whose tools
	// show when the fixed file has been applied.
	fix := func(t *testing.T, cfg map[string]any, config, second string) {
		delete(cfg, "listen")
		cfg["mcpServers"].(map[string]any)["obs2"] = map[string]any{"url": second}
		writeConfigFile(t, config, cfg)
	}

	t.Run("retrieve", func(t *testing.T) {
		t.Parallel()
		cfg, config, second := setup(t, "retrieve")
		c, _, _ := serveStdio(t, config)
		if got := retrieveUntil(t, c, "echo a message", "obs:echo"); strings.Contains(got, "refused") {
			t.Errorf("retrieve_tools before any change: got %q, want no refused line", got)
		}
		cfg["listen"] = badListen
		writeConfigFile(t, config, cfg)
		got := retrieveUntil(t, c, "echo a message", "mcproxy refused")
		checkNotice(t, got, config)
		if !strings.Contains(got, "obs:echo") {
			t.Errorf("retrieve_tools after a refused change: got %q, want the running config's tools still found", got)
		}
		if got := retrieveUntil(t, c, "xylophone quasar", "mcproxy refused"); !strings.Contains(got, "No tools match") {
			t.Errorf("retrieve_tools with no match after a refused change: got %q, want the no-match answer with the line", got)
		}

		fix(t, cfg, config, second)
		if got := retrieveUntil(t, c, "echo a message", "obs2:echo"); strings.Contains(got, "refused") {
			t.Errorf("retrieve_tools once the fixed file is applied: got %q, want no refused line", got)
		}
	})

	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		cfg, config, second := setup(t, "direct")
		c, _, _ := serveStdio(t, config)
		echo := func() string {
			t.Helper()
			res := callTool(t, c, "obs__echo", map[string]any{"message": "hi"})
			if res.IsError || !strings.Contains(text(res), "obs says hi") {
				t.Fatalf("obs__echo: got %q (isError %v), want the echo", text(res), res.IsError)
			}
			return text(res)
		}
		if got := echo(); strings.Contains(got, "refused") {
			t.Errorf("obs__echo before any change: got %q, want no refused line", got)
		}
		cfg["listen"] = badListen
		writeConfigFile(t, config, cfg)
		var got string
		waitFor(t, 30*time.Second, "a tool answer with the refused change", func() bool {
			got = echo()
			return strings.Contains(got, "mcproxy refused")
		})
		checkNotice(t, got, config)
		if got := echo(); strings.Contains(got, "refused") {
			t.Errorf("the next obs__echo: got %q, want the line only once per session", got)
		}

		fix(t, cfg, config, second)
		waitFor(t, 30*time.Second, "obs2__echo listed once the fixed file is applied", func() bool {
			return slices.Contains(listTools(t, c), "obs2__echo")
		})
		if got := echo(); strings.Contains(got, "refused") {
			t.Errorf("obs__echo once the fixed file is applied: got %q, want no refused line", got)
		}
	})
}
