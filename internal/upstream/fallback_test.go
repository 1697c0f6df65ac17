package upstream

import (
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestLegacySSEFallback configures server-everything's legacy SSE endpoint
// with a url and no transport: the streamable-HTTP initialize POST gets 404,
// the manager retries it as SSE, it comes up, and the log says so.
func TestLegacySSEFallback(t *testing.T) {
	log, logs := observed()
	m := startManager(t, map[string]config.ServerConfig{
		"legacy": {URL: startHTTPEverything(t, "sse") + "/sse"},
	}, Options{Logger: log})
	st := statusOf(t, m, "legacy")
	if st.State != StateReady || st.Transport != config.TransportSSE {
		t.Fatalf("got status %+v, want ready over %s after the fallback", st, config.TransportSSE)
	}
	if got := text(call(t, m, "legacy", "echo", map[string]any{"message": "old"})); got != "Echo: old" {
		t.Errorf("got echo %q, want %q", got, "Echo: old")
	}
	var said []string
	for _, e := range logs.All() {
		said = append(said, e.Message)
	}
	all := strings.Join(said, "\n")
	for _, want := range []string{"refused the streamable-HTTP initialize", "the upstream speaks legacy SSE"} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %q:\n%s", want, all)
		}
	}
	for _, e := range logs.All() {
		if e.Message == "upstream ready" && e.ContextMap()["transport"] != config.TransportSSE {
			t.Errorf("upstream ready logged transport %v, want %s", e.ContextMap()["transport"], config.TransportSSE)
		}
	}
}

// TestNoFallbackWithExplicitTransport keeps a server whose config says
// streamable-http on it: a 404 is an error, not a reason to switch.
func TestNoFallbackWithExplicitTransport(t *testing.T) {
	m := startManager(t, map[string]config.ServerConfig{
		"strict": {URL: startHTTPEverything(t, "sse") + "/sse", Transport: config.TransportStreamableHTTP},
	}, Options{})
	st := statusOf(t, m, "strict")
	if st.State == StateReady || st.Transport != config.TransportStreamableHTTP ||
		!strings.Contains(st.LastError, "HTTP 404") || !strings.Contains(st.LastError, `set mcpServers.strict.transport to "sse"`) {
		t.Fatalf("got status %+v, want down over %s, its error naming the 404 and the transport setting", st, config.TransportStreamableHTTP)
	}
}
