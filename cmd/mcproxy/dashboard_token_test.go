package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The dashboard's token stays with the dashboard (issue 26): opened in a
// real chromium from an old /?token= link, with a cookie an older mcproxy
// left behind, the page loads its data, refreshes it and answers a search,
// with the token in neither the address bar nor a cookie; then the same
// browser loads a page from another service on another loopback port,
// which receives no cookie and no header carrying the token.
func TestDashboardTokenStaysWithTheDashboard(t *testing.T) {
	bin := chromium(t)
	const token = "dash-secret-26"
	s := startServe(t, map[string]any{
		"auth_token": token,
		"mcpServers": map[string]any{
			"memory": map[string]any{
				"command": testenv.NodeBin(t, "mcp-server-memory"),
				"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")},
			},
		},
	})
	other := newHeaderRecorder()
	defer other.srv.Close()

	b := startCDP(t, bin)
	b.browserCall("Storage.setCookies", map[string]any{"cookies": []map[string]any{{
		"name": authheader.Cookie, "value": token, "domain": "127.0.0.1", "path": "/", "httpOnly": true, "sameSite": "Strict",
	}}}, nil)

	b.navigate(s.base + "/?token=" + token + "&q=search+nodes")
	dom := func() string {
		var html string
		b.eval("document.documentElement.outerHTML", &html)
		return html + "\n" + s.stderr.String()
	}
	b.waitTrue("the page shows the memory server ready and the search hit",
		`!!document.querySelector('tr[data-server="memory"] .state.ready') && !!document.querySelector('li[data-id="memory:search_nodes"]')`, dom)
	// The live refresh runs, still authorized.
	b.waitTrue("the page fetched /status twice",
		`performance.getEntriesByType("resource").filter((e) => new URL(e.name).pathname === "/status").length >= 2`, dom)
	var state struct {
		Href, Summary, Stored string
	}
	b.eval(`({Href: location.href, Summary: document.querySelector("#summary").textContent, Stored: sessionStorage.getItem("mcproxy_token")})`, &state)
	if strings.Contains(state.Href, token) || !strings.Contains(state.Href, "q=search+nodes") {
		t.Errorf("address bar: got %q, want the query without the token", state.Href)
	}
	if !strings.Contains(state.Summary, "servers ready") {
		t.Errorf("summary: got %q, want the status line", state.Summary)
	}
	if state.Stored != token {
		t.Errorf("sessionStorage: got %q, want the token", state.Stored)
	}
	var cookies struct {
		Cookies []struct{ Name, Value, Domain string } `json:"cookies"`
	}
	b.browserCall("Storage.getCookies", map[string]any{}, &cookies)
	for _, c := range cookies.Cookies {
		if c.Name == authheader.Cookie || strings.Contains(c.Value, token) {
			t.Errorf("the browser holds cookie %s=%s for %s, want the token in no cookie", c.Name, c.Value, c.Domain)
		}
	}

	// Another service on this host, in the same browser.
	b.navigate(other.srv.URL + "/")
	select {
	case <-other.fetched:
	case <-time.After(time.Minute):
		t.Fatalf("the other page's fetch never arrived\n%s", dom())
	}
	reqs := other.all()
	if len(reqs) < 2 {
		t.Fatalf("the other service got %d requests, want its page and its fetch", len(reqs))
	}
	for _, r := range reqs {
		if c := r.header.Values("Cookie"); len(c) != 0 {
			t.Errorf("%s on the other port got Cookie %q, want none", r.path, c)
		}
		for name, vs := range r.header {
			for _, v := range vs {
				if strings.Contains(v, token) {
					t.Errorf("%s on the other port got the token in %s: %q", r.path, name, v)
				}
			}
		}
	}
}

// headerRecorder is a web service on its own loopback port that records
// every request's headers. Its page fetches /again from itself, and fetched
// is closed when that fetch arrives.
type headerRecorder struct {
	srv     *httptest.Server
	fetched chan struct{}
	once    sync.Once

	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	path   string
	header http.Header
}

func newHeaderRecorder() *headerRecorder {
	h := &headerRecorder{fetched: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.reqs = append(h.reqs, recorded{path: r.URL.Path, header: r.Header.Clone()})
		h.mu.Unlock()
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><title>other</title><script>fetch("/again", {credentials: "include"})</script>`))
		case "/again":
			h.once.Do(func() { close(h.fetched) })
		default:
			http.NotFound(w, r)
		}
	}))
	return h
}

func (h *headerRecorder) all() []recorded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]recorded(nil), h.reqs...)
}
