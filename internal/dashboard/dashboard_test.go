package dashboard

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/metrics"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

func testHandler() http.Handler {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return New(Source{
		Servers: func() []upstream.Status {
			return []upstream.Status{
				{Server: "git", Transport: "stdio", State: upstream.StateReady, Tools: 1, Since: t0.Add(-90 * time.Second)},
				{Server: "web", Transport: "streamable-http", State: upstream.StateDown, LastError: "connecting: 502"},
			}
		},
		Tools: func() []config.Tool {
			return []config.Tool{{ID: "git:log", Server: "git", Name: "log", Description: "show commits"}}
		},
		Search: func(_ context.Context, q string, limit int) ([]Hit, error) {
			return []Hit{{ID: "git:log", Server: "git", Name: "log", Score: float64(limit)}}, nil
		},
		IndexSize: func() (int, error) { return 1, nil },
		Version:   "v1",
		Started:   t0.Add(-time.Hour),
		Now:       func() time.Time { return t0 },
	}, nil)
}

func get(h http.Handler, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	return w
}

func TestStatusDocument(t *testing.T) {
	w := get(testHandler(), PathStatus)
	var st Status
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.UptimeSeconds != 3600 || st.IndexSize != 1 || len(st.Servers) != 2 {
		t.Fatalf("got %+v", st)
	}
	if git := st.Servers[0]; git.UptimeSeconds != 90 || len(git.Tools) != 1 || git.Tools[0].Name != "log" {
		t.Errorf("git: got %+v, want 90s up and its tool", git)
	}
	if web := st.Servers[1]; web.UptimeSeconds != 0 || web.LastError != "connecting: 502" || web.Tools == nil {
		t.Errorf("web: got %+v, want down with its error and an empty tool list", web)
	}
}

func TestSearchRequests(t *testing.T) {
	h := testHandler()
	for _, tc := range []struct {
		target string
		code   int
		want   string
	}{
		{PathSearch + "?q=log", 200, `"score": 0`},
		{PathSearch + "?q=log&limit=7", 200, `"score": 7`},
		{PathSearch, 400, "give a query"},
		{PathSearch + "?q=x&limit=99", 400, "limit must be 1 to 50"},
	} {
		w := get(h, tc.target)
		if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: got %d %s, want %d with %q", tc.target, w.Code, w.Body.String(), tc.code, tc.want)
		}
	}
}

// An old /?token= link leads to the same page with the token in the
// fragment, which the browser sends nowhere; nothing is stored in a cookie,
// and a cookie an older mcproxy left is expired.
func TestPageTokenMovesToFragment(t *testing.T) {
	w := get(testHandler(), "/?token=s3cret+%2F&q=git")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/?q=git#token=s3cret+%2F" {
		t.Fatalf("got %d to %q, want 303 to /?q=git#token=s3cret+%%2F", w.Code, w.Header().Get("Location"))
	}
	if c := w.Result().Cookies(); len(c) != 0 {
		t.Errorf("cookies: got %+v, want none", c)
	}
	if strings.Contains(w.Body.String(), "s3cret") {
		t.Errorf("the redirect's body echoes the token: %q", w.Body.String())
	}
	if w := get(testHandler(), "/"); w.Code != 200 || !strings.Contains(w.Body.String(), "<title>mcproxy</title>") || len(w.Result().Cookies()) != 0 {
		t.Errorf("page: got %d with cookies %+v, want 200 and none", w.Code, w.Result().Cookies())
	}
	for _, target := range []string{"/", "/?token=s3cret"} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.AddCookie(&http.Cookie{Name: authheader.Cookie, Value: "s3cret"})
		w := httptest.NewRecorder()
		testHandler().ServeHTTP(w, r)
		if c := w.Result().Cookies(); len(c) != 1 || c[0].Name != authheader.Cookie || c[0].Value != "" || c[0].MaxAge >= 0 || c[0].Path != "/" {
			t.Errorf("%s with an old cookie: got cookies %+v, want it expired", target, c)
		}
	}
	if w := get(testHandler(), "/other"); w.Code != http.StatusNotFound {
		t.Errorf("/other: got %d, want 404 (the page is / alone)", w.Code)
	}
}

// TestGatewayCostSaved: the estimate compares what was billed with going
// straight in the same unit, the provider's tokens, whatever mcproxy's own
// count of a request (a provider counting 40 times more tokens than mcproxy
// made it -3900%).
func TestGatewayCostSaved(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		g    metrics.Gateway
		want float64
	}{
		{"nothing compressed or cached", metrics.Gateway{ClientTokens: 10, ForwardedTokens: 10, UsageInput: 400}, 0},
		{"half forwarded", metrics.Gateway{ClientTokens: 1000, ForwardedTokens: 500, UsageInput: 550}, 0.5},
		{"cache reads at a tenth", metrics.Gateway{ClientTokens: 10, ForwardedTokens: 10, UsageInput: 100, UsageCacheRead: 300}, 0.675},
		{"no usage reported", metrics.Gateway{ClientTokens: 1000, ForwardedTokens: 800}, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gatewayFigures(tc.g).CostSavedShare; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("cost saved share of %+v: got %v, want %v", tc.g, got, tc.want)
			}
		})
	}
}
