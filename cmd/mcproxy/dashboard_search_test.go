package main

import (
	"net"
	"net/http/httptest"
	"testing"
)

// The dashboard's search follows the servers as they connect: a query
// asked while its server was still down is asked again once the server is
// up, without the user typing again. Before, the page searched once at load
// and showed "no tool matches" until the next keystroke (seen as a flaky
// TestDashboardTokenStaysWithTheDashboard on a loaded machine).
func TestDashboardSearchFollowsServers(t *testing.T) {
	bin := chromium(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing answers there until the test serves it
	cfg := map[string]any{
		"noa":        map[string]any{"enabled": false},
		"mcpServers": map[string]any{"late": map[string]any{"url": "http://" + addr + "/mcp"}},
	}
	s := startServe(t, cfg)
	b := startCDP(t, bin)
	dom := func() string {
		var html string
		b.eval("document.documentElement.outerHTML", &html)
		return html + "\n" + s.stderr.String()
	}
	b.navigate(s.base + "/?q=echo+a+message")
	b.waitTrue("late down and the search answered without a hit",
		`!!document.querySelector('tr[data-server="late"] .state.down') && document.querySelector("#search-note").textContent === "no tool matches"`, dom)

	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on %s again: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Listener.Close()
	srv.Listener = ln
	serveActivity(t, srv)
	// An edit of late's entry restarts it at once, rather than at its next
	// retry (up to 30 s away); the page is not told, it only refreshes.
	cfg["mcpServers"] = map[string]any{"late": map[string]any{"url": "http://" + addr + "/mcp", "headers": map[string]string{"X-Try": "again"}}}
	writeJSON(t, s.config, cfg)
	b.waitTrue("the search's hit once late is up", `!!document.querySelector('li[data-id="late:echo"]')`, dom)
}
