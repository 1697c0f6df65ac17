package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// BenchmarkTypeScriptCallPath measures a call's path through mcproxy as an
// MCP client sees it (issue 28): the official TypeScript SDK client over
// stdio calls a server straight and the same server through `mcproxy serve
// --stdio` (default settings, noa on), alternating call by call in one run
// (testdata/callpath.mjs). The cases are the npm server-everything's echo
// and write_file of 1 MB and 5 MB to the npm server-filesystem, each
// reporting both mean times and proxied/straight; and mcproxy's resident
// memory (VmRSS) after five 5 MB write_file calls against its figure at
// rest, from a proxy that served nothing else. Nothing is asserted about
// time or memory.
func BenchmarkTypeScriptCallPath(b *testing.B) {
	everything := testenv.NodeBin(b, "mcp-server-everything")
	filesystem := testenv.NodeBin(b, "mcp-server-filesystem")
	fsDir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	// proxy is the command line of an mcproxy over one upstream, with
	// nothing in its config but the server and a data_dir of its own.
	proxy := func(b *testing.B, name string, server map[string]any) map[string]any {
		dir := b.TempDir()
		config := writeConfigFile(b, filepath.Join(dir, "config.json"), map[string]any{
			"mcpServers": map[string]any{name: server},
			"data_dir":   filepath.Join(dir, "data"),
		})
		return map[string]any{"command": binary, "args": []string{"serve", "--stdio", "--config", config}}
	}
	fsServer := map[string]any{"command": filesystem, "args": []string{fsDir}}

	b.Run("echo", func(b *testing.B) {
		out := runCallPath(b, map[string]any{
			"mode": "echo", "n": b.N,
			"server": map[string]any{"command": everything},
			"proxy":  proxy(b, "everything", map[string]any{"command": everything}),
		})
		reportStraightProxied(b, out)
	})
	for _, size := range []struct {
		name  string
		bytes int
	}{{"write_file_1MB", 1 << 20}, {"write_file_5MB", 5 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			out := runCallPath(b, map[string]any{
				"mode": "write", "n": b.N, "size": size.bytes, "dir": fsDir,
				"server": fsServer,
				"proxy":  proxy(b, "filesystem", fsServer),
			})
			reportStraightProxied(b, out)
		})
	}
	// Five calls, whatever b.N is: the figure is memory after five.
	b.Run("rss_after_five_5MB_writes", func(b *testing.B) {
		out := runCallPath(b, map[string]any{
			"mode": "rss", "n": 5, "size": 5 << 20, "dir": fsDir,
			"proxy": proxy(b, "filesystem", fsServer),
		})
		rest, after := out["rest_kb"]/1024, out["after_kb"]/1024
		b.ReportMetric(rest, "rest-rss-MB")
		b.ReportMetric(after, "after-rss-MB")
		b.ReportMetric(after/rest, "after/rest")
	})
}

// runCallPath runs testdata/callpath.mjs with opts and returns the figures
// it printed. The benchmark's clock covers the whole script.
func runCallPath(b *testing.B, opts map[string]any) map[string]float64 {
	b.Helper()
	arg, err := json.Marshal(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(b), filepath.Join("testdata", "callpath.mjs"), string(arg))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("callpath.mjs (TypeScript SDK client): %v\n%s", err, out)
	}
	var figures map[string]float64
	if err := json.Unmarshal(out, &figures); err != nil {
		b.Fatalf("callpath.mjs printed %q: %v", out, err)
	}
	return figures
}

// reportStraightProxied reports the mean times callpath.mjs measured and
// their ratio.
func reportStraightProxied(b *testing.B, out map[string]float64) {
	b.Helper()
	straight, proxied := out["straight_ns"], out["proxied_ns"]
	if straight <= 0 || proxied <= 0 {
		b.Fatalf("callpath.mjs: got %v, want both mean times", out)
	}
	b.ReportMetric(straight, "straight-ns/call")
	b.ReportMetric(proxied, "proxied-ns/call")
	b.ReportMetric(proxied/straight, "proxied/straight")
}
