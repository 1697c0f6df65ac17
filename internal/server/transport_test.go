package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// TestServeHTTPSafety checks the guard on the real listener, for every path.
func TestServeHTTPSafety(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	f := startFront(t, up, newWordIndex(), Options{}, mcptransport.HTTPOptions{AuthToken: "tok-123"})
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

	for _, path := range []string{mcptransport.PathStreamable, mcptransport.PathMessage, mcptransport.PathSSE} {
		for _, tc := range []struct {
			name   string
			header map[string]string
			want   int
		}{
			{"foreign origin", map[string]string{"Origin": "https://evil.example", "Authorization": "Bearer tok-123"}, 403},
			{"no bearer", nil, 401},
			{"wrong bearer", map[string]string{"Authorization": "Bearer nope"}, 401},
		} {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				method := http.MethodPost
				if path == mcptransport.PathSSE {
					method = http.MethodGet
				}
				req, err := http.NewRequestWithContext(context.Background(), method, f.base+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tc.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Errorf("got %d, want %d", resp.StatusCode, tc.want)
				}
			})
		}
	}

	t.Run("right bearer initializes", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, f.base+mcptransport.PathStreamable, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer tok-123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", resp.StatusCode)
		}
	})
}

// A connection that never sends a request (HTTP clients keep spare ones
// open) must not hold up a graceful shutdown: net/http alone would wait for
// it past the shutdown timeout and Serve would report a failed shutdown.
func TestServeShutdownWithUnusedConnection(t *testing.T) {
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveHTTP(ctx, transportOf(s, mcptransport.Options{ShutdownTimeout: 2 * time.Second}), ln, mcptransport.HTTPOptions{})
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// One served request proves the connection above was accepted first.
	resp, err := http.Get("http://" + ln.Addr().String() + mcptransport.PathStreamable)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve with an unused connection open: got %v, want a clean shutdown", err)
	}
}
