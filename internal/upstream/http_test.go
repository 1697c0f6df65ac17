//go:build unix

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// wireLog records what an HTTP upstream received.
type wireLog struct {
	mu       sync.Mutex
	messages []wireMessage
	authBad  int // requests without the expected Authorization header
}

type wireMessage struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
		Name      string          `json:"name"`
	} `json:"params"`
}

func (w *wireLog) snapshot() []wireMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireMessage(nil), w.messages...)
}

// goHTTPPeer serves the fault-injection peer over streamable HTTP (/mcp) or
// SSE (/sse, /message) on addr ("" = any loopback port), recording every
// JSON-RPC message it receives and checking the Authorization header.
func goHTTPPeer(t *testing.T, kind, addr, dir string) (*httptest.Server, *wireLog) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(nil)
	ts.Listener.Close()
	ts.Listener = ln
	base := "http://" + ln.Addr().String()
	mcpServer := newPeerServer(dir)
	var h http.Handler
	if kind == config.TransportSSE {
		h = server.NewSSEServer(mcpServer, server.WithBaseURL(base), server.WithKeepAlive(false))
	} else {
		h = server.NewStreamableHTTPServer(mcpServer)
	}
	wl := &wireLog{}
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-secret" {
			wl.mu.Lock()
			wl.authBad++
			wl.mu.Unlock()
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg wireMessage
			if json.Unmarshal(body, &msg) == nil {
				wl.mu.Lock()
				wl.messages = append(wl.messages, msg)
				wl.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts, wl
}

func httpPeerConfig(kind string, ts *httptest.Server) config.ServerConfig {
	sc := config.ServerConfig{URL: ts.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer tok-secret"}}
	if kind == config.TransportSSE {
		sc.URL, sc.Transport = ts.URL+"/sse", "sse"
	}
	return sc
}

// TestHTTPCancellationAndHeaders: over both HTTP transports a cancelled
// call reaches the upstream as notifications/cancelled for that request's
// id on 2025-11-25, and as the end of the request's stream on 2026-07-28
// (the revision has no notifications/cancelled over HTTP); either way the
// upstream's handler is cancelled, headers are sent on every request, and
// header values are not logged.
func TestHTTPCancellationAndHeaders(t *testing.T) {
	for _, tc := range []struct{ kind, protocol string }{
		{config.TransportStreamableHTTP, mcp.LATEST_LEGACY_PROTOCOL_VERSION},
		{config.TransportStreamableHTTP, mcp.LATEST_PROTOCOL_VERSION},
		{config.TransportSSE, ""},
	} {
		kind := tc.kind
		name := tc.protocol
		if name == "" {
			name = "negotiated"
		}
		t.Run(kind+"/"+name, func(t *testing.T) {
			dir := t.TempDir()
			ts, wl := goHTTPPeer(t, kind, "", dir)
			log, logs := observed()
			sc := httpPeerConfig(kind, ts)
			sc.Protocol = tc.protocol
			m := startManager(t, map[string]config.ServerConfig{"h": sc}, Options{Logger: log})
			modern := protocolOf(logs, "h") == mcp.LATEST_PROTOCOL_VERSION
			if want := tc.protocol == mcp.LATEST_PROTOCOL_VERSION; modern != want {
				t.Fatalf("spoken in %q, want 2026-07-28: %v", protocolOf(logs, "h"), want)
			}
			if st := statusOf(t, m, "h"); st.State != StateReady || st.Tools != len(peerToolNames) {
				t.Fatalf("got %+v, want ready with %d tools", st, len(peerToolNames))
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, "h", "sleep", map[string]any{"ms": 60000})
				done <- err
			}()
			waitUntil(t, 10*time.Second, "the sleep call to start", func() bool {
				_, err := os.Stat(filepath.Join(dir, "started"))
				return err == nil
			})
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("got %v, want context.Canceled", err)
			}
			var callID json.RawMessage
			waitUntil(t, 10*time.Second, "notifications/cancelled for the call", func() bool {
				if modern {
					return true // 2026-07-28 ends the stream instead; the handler's cancellation is checked below
				}
				for _, msg := range wl.snapshot() {
					if msg.Method == "tools/call" && msg.Params.Name == "sleep" {
						callID = msg.ID
					}
					if msg.Method == "notifications/cancelled" && callID != nil && bytes.Equal(msg.Params.RequestID, callID) {
						return true
					}
				}
				return false
			})
			waitUntil(t, 10*time.Second, "the upstream handler to be cancelled", func() bool {
				_, err := os.Stat(filepath.Join(dir, "cancelled"))
				return err == nil
			})
			if got := text(call(t, m, "h", "echo", map[string]any{"text": "ok"})); got != "echo: ok" {
				t.Errorf("got %q, want %q", got, "echo: ok")
			}
			// Large arguments: on 2025-11-25 mcproxy sends the call itself
			// (callBig), with the same headers; on 2026-07-28 the client does.
			big := strings.Repeat("big \"arg\"\n", bigArgs/8)
			if got := text(call(t, m, "h", "echo", map[string]any{"text": big})); got != "echo: "+big {
				t.Errorf("the big echo came back with %d bytes, want %d", len(got), len("echo: "+big))
			}
			var bigID json.RawMessage
			for _, msg := range wl.snapshot() {
				if msg.Method == "tools/call" && msg.Params.Name == "echo" {
					bigID = msg.ID
				}
			}
			if byUs := bytes.HasPrefix(bigID, []byte(`"mcproxy-`)); byUs == modern {
				t.Errorf("the big call's id is %s: sent by callBig %v, want %v", bigID, byUs, !modern)
			}
			wl.mu.Lock()
			if wl.authBad != 0 {
				t.Errorf("got %d requests without the configured Authorization header", wl.authBad)
			}
			wl.mu.Unlock()
			for _, e := range logs.All() {
				b, _ := json.Marshal(e.ContextMap())
				if strings.Contains(e.Message+string(b), "tok-secret") {
					t.Errorf("a log entry carries the header secret: %s %s", e.Message, b)
				}
			}
		})
	}
}

// TestHTTPDropAndReconnect: when an HTTP upstream goes away the server is
// marked down (noticed by a failing call, by the ping, or for SSE by the
// stream ending), and it is back once the upstream returns.
func TestHTTPDropAndReconnect(t *testing.T) {
	cases := []struct {
		name, kind string
		ping       time.Duration
		byCall     bool
	}{
		{"streamable-http by call", config.TransportStreamableHTTP, -1, true},
		{"streamable-http by ping", config.TransportStreamableHTTP, 100 * time.Millisecond, false},
		{"sse by stream end", config.TransportSSE, -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, _ := goHTTPPeer(t, tc.kind, "", t.TempDir())
			addr := ts.Listener.Addr().String()
			changes := make(chan bool, 10)
			m := startManager(t, map[string]config.ServerConfig{"h": httpPeerConfig(tc.kind, ts)}, Options{
				MinBackoff: 300 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, PingInterval: tc.ping,
				OnToolsChanged: func(_ string, tools []config.Tool) { changes <- tools != nil },
			})
			if up := <-changes; !up {
				t.Fatal("got a down notification first, want up")
			}
			ts.CloseClientConnections()
			ts.Close()
			if tc.byCall {
				_, err := m.Call(context.Background(), "h", "echo", map[string]any{"text": "x"})
				var down *DownError
				if !errors.As(err, &down) || down.Server != "h" {
					t.Fatalf("got %v calling a vanished upstream, want a *DownError", err)
				}
			}
			select {
			case up := <-changes:
				if up {
					t.Fatal("got up, want down after the upstream went away")
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no down notification; status %+v", statusOf(t, m, "h"))
			}
			if st := statusOf(t, m, "h"); st.State == StateReady || st.LastError == "" {
				t.Errorf("got %+v, want not ready, with the reason", st)
			}
			goHTTPPeer(t, tc.kind, addr, t.TempDir())
			select {
			case up := <-changes:
				if !up {
					t.Fatal("got down, want up after the upstream returned")
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("did not reconnect; status %+v", statusOf(t, m, "h"))
			}
			if got := text(call(t, m, "h", "echo", map[string]any{"text": "back"})); got != "echo: back" {
				t.Errorf("got %q, want %q", got, "echo: back")
			}
		})
	}
}
