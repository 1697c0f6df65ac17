package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
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
	upstreamURL := startEchoUpstream(b)
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
	config := filepath.Join(dir, "config.json")
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"bench": map[string]any{"url": upstreamURL}},
		"data_dir":   filepath.Join(dir, "data"),
		"log_level":  "warn",
		"noa":        map[string]any{"enabled": noaOn},
	})
	if err := os.WriteFile(config, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	base, _ := serveHTTP(b, config)

	direct := httpClient(b, upstreamURL)
	viaProxy := httpClient(b, base+"/mcp")

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

// startEchoUpstream serves an mcp-go server with an echo tool over
// streamable HTTP on loopback and returns its URL.
func startEchoUpstream(b *testing.B) string {
	b.Helper()
	s := mcpserver.NewMCPServer("bench-upstream", "1.0.0")
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Echo a message."),
		mcp.WithString("message", mcp.Required()),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("message", "")), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	streamable := mcpserver.NewStreamableHTTPServer(s)
	mux.Handle("/mcp", streamable)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = streamable.Shutdown(ctx)
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

func httpClient(b *testing.B, url string) *client.Client {
	b.Helper()
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	initialize(b, c)
	return c
}
