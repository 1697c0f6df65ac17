package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestRelayRootsGoSDKClient: an upstream's roots/list reaches a Go SDK
// (v1.8.0) client on 2026-07-28 as an input request it can decode, and
// its answer reaches the upstream, whether the upstream asks on
// 2026-07-28 (its own input_required, forwarded) or on 2025-11-25 (a
// server-to-client request, bridged by the relay). mcp-go encodes a
// roots/list input request without params, which the Go SDK refuses
// ("unexpected end of JSON input"); the front adds them (issue 29).
func TestRelayRootsGoSDKClient(t *testing.T) {
	t.Parallel()
	for _, up := range []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run("upstream-"+up, func(t *testing.T) {
			t.Parallel()
			sc, _ := startModernUpstream(t, "http", up)
			f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client := gosdk.NewClient(&gosdk.Implementation{Name: "go-sdk-roots", Version: "1.0.0"}, nil)
			client.AddRoots(&gosdk.Root{URI: "file:///work/go-sdk-root", Name: "work"})
			cs, err := client.Connect(ctx, &gosdk.StreamableClientTransport{Endpoint: f.url}, nil)
			if err != nil {
				t.Fatalf("connecting the Go SDK client: %v", err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != mcp.LATEST_PROTOCOL_VERSION {
				t.Fatalf("the Go SDK client speaks %s, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
			}
			res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: "up__roots"})
			if err != nil {
				t.Fatalf("calling up__roots: %v", err)
			}
			var text strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(*gosdk.TextContent); ok {
					text.WriteString(tc.Text)
				}
			}
			if got, want := text.String(), "roots=file:///work/go-sdk-root"; got != want || res.IsError {
				t.Errorf("up__roots: got %q (isError %v), want %q", got, res.IsError, want)
			}
		})
	}
}
