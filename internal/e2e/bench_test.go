package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkCallToolOverhead measures what mcproxy adds to a tools/call. The
// same upstream (an mcp-go server over streamable HTTP on loopback) is
// called directly and through the mcproxy binary's call_tool, alternating
// call by call in the same run so both see the same machine state. It
// reports both latencies and their ratio; nothing is asserted about time.
// It runs with noa off and on (the default), so the cost of recording each
// call in the session (a transcript append and fsync, a noa turn) shows as
// the difference between the two ratios.
func BenchmarkCallToolOverhead(b *testing.B) {
	// Its echo tool answers at once: what is measured is the path, not the tool.
	upstreamURL := newGoUpstream(b, "bench").url()
	for _, on := range []bool{false, true} {
		name := "noa=off"
		if on {
			name = "noa=on"
		}
		b.Run(name, func(b *testing.B) { benchCallTool(b, upstreamURL, on) })
	}
}

func benchCallTool(b *testing.B, upstreamURL string, noaOn bool) {
	dir := b.TempDir()
	config := writeConfigFile(b, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"bench": map[string]any{"url": upstreamURL}},
		"data_dir":   filepath.Join(dir, "data"),
		"log_level":  "warn",
		"noa":        map[string]any{"enabled": noaOn},
	})
	base, _ := serveHTTP(b, config)

	direct := startHTTP(b, upstreamURL)
	initialize(b, direct)
	viaProxy := startHTTP(b, base+"/mcp")
	initialize(b, viaProxy)

	directReq := mcp.CallToolRequest{}
	directReq.Params.Name = "echo"
	directReq.Params.Arguments = map[string]any{"message": "benchmark payload"}
	proxyReq := mcp.CallToolRequest{}
	proxyReq.Params.Name = "call_tool"
	proxyReq.Params.Arguments = map[string]any{"name": "bench:echo", "arguments": map[string]any{"message": "benchmark payload"}}

	ctx := context.Background()
	call := func(c *client.Client, req mcp.CallToolRequest) time.Duration {
		start := time.Now()
		res, err := c.CallTool(ctx, req)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatalf("tools/call %s: %v %+v", req.Params.Name, err, res)
		}
		return d
	}
	// Warm both paths (connections, upstream session) before measuring.
	call(direct, directReq)
	call(viaProxy, proxyReq)

	var directTotal, proxyTotal time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		directTotal += call(direct, directReq)
		proxyTotal += call(viaProxy, proxyReq)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(directTotal.Nanoseconds())/n, "direct-ns/call")
	b.ReportMetric(float64(proxyTotal.Nanoseconds())/n, "proxied-ns/call")
	b.ReportMetric(float64(proxyTotal)/float64(directTotal), "proxied/direct")
}
