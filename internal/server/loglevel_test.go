package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// logLines is what c received as notifications/message, "logger: data".
func logLines(c *frontClient) []string {
	var out []string
	for _, n := range c.notifications("notifications/message") {
		out = append(out, fmt.Sprint(n.Params.AdditionalFields["logger"], ": ", n.Params.AdditionalFields["data"]))
	}
	return out
}

func setLevel(t *testing.T, c *frontClient, level mcp.LoggingLevel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var lr mcp.SetLevelRequest
	lr.Params.Level = level
	if err := c.SetLevel(ctx, lr); err != nil {
		t.Fatal(err)
	}
}

// TestRelayStatelessLogLevel: a stateless (2026-07-28) client's per-request
// log level, sent in _meta by mcp-go's client in modern mode, is applied:
// the upstream (a real 2025-11-25 mcp-go server whose default level is
// error) is raised to it for the call, the call's log messages reach the
// client at or above it only, a request without a level gets none, and
// mcproxy's own messages reach a stateless request in flight at its level.
// The legacy sessions keep what they asked for.
func TestRelayStatelessLogLevel(t *testing.T) {
	sc, dir := startRelayUpstream(t, "stdio")
	f := startRelayFront(t, map[string]config.ServerConfig{"up": sc})
	s := dialFront(t, f.url, "", answeringClient())
	if s.GetTransport().(*transport.StreamableHTTP).RequiresLegacyProtocol() {
		t.Fatal("the client fell back to the legacy protocol; want 2026-07-28")
	}
	legacy := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient()) // never sets a level
	warn := dialFront(t, f.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, answeringClient())

	t.Run("no level, no messages", func(t *testing.T) {
		s.call(t, "up__slow", nil)
		if got := logLines(s); len(got) != 0 {
			t.Errorf("a stateless request without a log level got %q", got)
		}
	})
	t.Run("info", func(t *testing.T) {
		setLevel(t, s, mcp.LoggingLevelInfo)
		if got := s.call(t, "up__level", nil); got != "level=info" {
			t.Errorf("upstream level during the call: got %q, want level=info", got)
		}
		s.call(t, "up__slow", nil)
		if got, want := logLines(s), []string{"slow: info from slow"}; !slices.Equal(got, want) {
			t.Errorf("at info: got %q, want %q", got, want)
		}
	})
	t.Run("debug", func(t *testing.T) {
		setLevel(t, s, mcp.LoggingLevelDebug)
		before := len(logLines(s))
		s.call(t, "up__slow", nil)
		if got, want := logLines(s)[before:], []string{"slow: info from slow", "slow: debug from slow"}; !slices.Equal(got, want) {
			t.Errorf("at debug: got %q, want %q", got, want)
		}
	})
	t.Run("a later round", func(t *testing.T) {
		// The upstream logs after the client answered its sampling request
		// (the call's second round): the message goes on the retry's
		// stream, the first request's having ended with input_required.
		before := len(logLines(s))
		if got := s.call(t, "up__ask_log", nil); got != "asked" {
			t.Fatalf("ask_log: got %q", got)
		}
		if got, want := logLines(s)[before:], []string{"ask_log: after the answer"}; !slices.Equal(got, want) {
			t.Errorf("log of the second round: got %q, want %q", got, want)
		}
	})
	t.Run("legacy sessions keep their level", func(t *testing.T) {
		setLevel(t, warn, mcp.LoggingLevelWarning)
		if got := warn.call(t, "up__level", nil); got != "level=warning" {
			t.Errorf("upstream level for the legacy session: got %q, want level=warning", got)
		}
		if got := s.call(t, "up__level", nil); got != "level=debug" {
			t.Errorf("upstream level during the stateless call: got %q, want level=debug", got)
		}
		// The stateless call ended: the upstream is back at what the
		// legacy sessions want.
		if got := warn.call(t, "up__level", nil); got != "level=warning" {
			t.Errorf("upstream level after the stateless call: got %q, want level=warning", got)
		}
		for _, c := range []*frontClient{legacy, warn} {
			c.call(t, "up__slow", nil)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, c := range []*frontClient{legacy, warn} {
			if err := c.Ping(ctx); err != nil { // a round trip, so anything sent has arrived
				t.Fatal(err)
			}
			if got := logLines(c); len(got) != 0 {
				t.Errorf("a legacy session got %q; its level (error or warning) admits none of the upstream's info and debug", got)
			}
		}
	})
	t.Run("mcproxy's own messages", func(t *testing.T) {
		quiet := dialFront(t, f.url, "", answeringClient())
		setLevel(t, quiet, mcp.LoggingLevelError)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 2)
		for _, c := range []*frontClient{s, quiet} {
			go func() {
				var req mcp.CallToolRequest
				req.Params.Name = "up__block"
				_, err := c.CallTool(ctx, req)
				errc <- err
			}()
		}
		waitFor(t, "both stateless calls to be answered", func() bool {
			return f.pass.Answering() == 2 && marked(dir, "blocking")
		})
		f.ToolsChanged("up", nil) // mcproxy says, at warning, that the tools are gone
		waitFor(t, "mcproxy's message on the stateless request's stream", func() bool {
			return slices.ContainsFunc(logLines(s), func(l string) bool { return strings.HasPrefix(l, `mcproxy: upstream "up" is down`) })
		})
		cancel()
		<-errc
		<-errc
		if got := logLines(quiet); len(got) != 0 {
			t.Errorf("a stateless request at level error got %q", got)
		}
	})
}
