//go:build unix

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// flakyProxy is a reverse proxy in front of an HTTP upstream that answers
// 502 instead of forwarding: once for the next tools/call when failNext is
// set, or for every request while failAll is set.
type flakyProxy struct {
	failNext, failAll atomic.Bool
	mu                sync.Mutex
	refused           []string // methods answered with 502
}

func startFlakyProxy(t *testing.T, target string) (*flakyProxy, *httptest.Server) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	fp := &flakyProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg wireMessage
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			_ = json.Unmarshal(body, &msg)
		}
		if fp.failAll.Load() || (msg.Method == "tools/call" && fp.failNext.CompareAndSwap(true, false)) {
			fp.mu.Lock()
			fp.refused = append(fp.refused, r.Method+" "+msg.Method)
			fp.mu.Unlock()
			http.Error(w, "upstream connect error or disconnect/reset before headers", http.StatusBadGateway)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return fp, ts
}

// countMethod counts the messages with method m the upstream received.
func countMethod(wl *wireLog, m string) int {
	n := 0
	for _, msg := range wl.snapshot() {
		if msg.Method == m {
			n++
		}
	}
	return n
}

// TestOne502DoesNotTakeTheServerDown: a single tools/call answered 502 by a
// reverse proxy fails with an error naming the server and the status, but
// the server answers the ping that follows, so it stays ready: the next
// call goes through on the same connection, with no reconnect. When the
// proxy then refuses everything, the ping fails too and the server is
// marked down.
//
// On 2025-11-25 the connection starts with initialize and the probe is a
// ping; on 2026-07-28, which has neither, both are a server/discover (two
// at the start: mcp-go's probe, and mcproxy's asking for the revisions).
func TestOne502DoesNotTakeTheServerDown(t *testing.T) {
	for _, tc := range []struct {
		protocol, probe string
		inits, probes   int // initialize requests, and requests of the probe's method, the upstream sees in all
	}{
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, "ping", 1, 1},
		{mcp.LATEST_PROTOCOL_VERSION, "server/discover", 0, 3},
	} {
		t.Run(tc.protocol, func(t *testing.T) { testOne502(t, tc.protocol, tc.probe, tc.inits, tc.probes) })
	}
}

func testOne502(t *testing.T, protocol, probe string, inits, probes int) {
	peer, wl := goHTTPPeer(t, config.TransportStreamableHTTP, "", t.TempDir())
	fp, proxy := startFlakyProxy(t, peer.URL)
	sc := httpPeerConfig(config.TransportStreamableHTTP, proxy)
	sc.Protocol = protocol
	var ups, downs atomic.Int32
	m := startManager(t, map[string]config.ServerConfig{"h": sc}, Options{
		// A short backoff, so a wrongful down would reconnect (and be
		// counted) within the test; no periodic pings, so every ping the
		// upstream sees is the probe.
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, PingInterval: -1,
		OnToolsChanged: func(_ string, tools []config.Tool) {
			if tools == nil {
				downs.Add(1)
			} else {
				ups.Add(1)
			}
		},
	})
	if got := text(call(t, m, "h", "echo", map[string]any{"text": "before"})); got != "echo: before" {
		t.Fatalf("got %q, want %q", got, "echo: before")
	}

	fp.failNext.Store(true)
	_, err := m.Call(context.Background(), "h", "echo", map[string]any{"text": "refused"})
	var ce *CallError
	if !errors.As(err, &ce) || ce.Server != "h" || ce.Tool != "echo" || ce.Status != http.StatusBadGateway {
		t.Fatalf("got %v (%T), want a *CallError for h:echo with status 502", err, err)
	}
	for _, want := range []string{`h:echo`, "HTTP 502 Bad Gateway", `upstream "h" still answers ping`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got error %q, want it to contain %q", err, want)
		}
	}
	var down *DownError
	if errors.As(err, &down) {
		t.Errorf("got a *DownError %v for one refused request", err)
	}
	if st := statusOf(t, m, "h"); st.State != StateReady || st.LastError != "" {
		t.Errorf("got %+v right after the 502, want ready", st)
	}
	if got := text(call(t, m, "h", "echo", map[string]any{"text": "after"})); got != "echo: after" {
		t.Errorf("got %q, want %q", got, "echo: after")
	}
	// Give a wrongful reconnect (50ms backoff) time to show.
	time.Sleep(300 * time.Millisecond)
	if got, want := countMethod(wl, "initialize"), inits; got != want {
		t.Errorf("the upstream saw %d initialize requests, want %d (no reconnect)", got, want)
	}
	if got := countMethod(wl, probe); got != probes {
		t.Errorf("the upstream saw %d %s requests, want %d: the probe after the failed call (and the two that start a 2026-07-28 connection)", got, probe, probes)
	}
	if u, d := ups.Load(), downs.Load(); u != 1 || d != 0 {
		t.Errorf("got %d up and %d down notifications, want 1 up and no down", u, d)
	}
	fp.mu.Lock()
	refused := append([]string(nil), fp.refused...)
	fp.mu.Unlock()
	if len(refused) != 1 || refused[0] != "POST tools/call" {
		t.Errorf("the proxy refused %q, want exactly one tools/call", refused)
	}

	// Now the proxy refuses everything: the probe fails too, so the server
	// is down, and the reason names the status.
	fp.failAll.Store(true)
	_, err = m.Call(context.Background(), "h", "echo", map[string]any{"text": "dead"})
	if !errors.As(err, &down) || down.Server != "h" || !strings.Contains(down.LastError, "502") ||
		!strings.Contains(down.LastError, "a ping right after failed too") {
		t.Fatalf("got %v (%T) with the proxy refusing everything, want a *DownError naming the 502 and the failed ping", err, err)
	}
	if st := statusOf(t, m, "h"); st.State == StateReady {
		t.Errorf("got %+v, want not ready once the ping fails too", st)
	}
	fp.failAll.Store(false)
	waitUntil(t, 20*time.Second, "the server to come back", func() bool { return statusOf(t, m, "h").State == StateReady })
	if got := text(call(t, m, "h", "echo", map[string]any{"text": "back"})); got != "echo: back" {
		t.Errorf("got %q, want %q", got, "echo: back")
	}
}
