package mcptransport

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcproxy/mcproxy/internal/authheader"
)

// The dashboard's browser sends auth_token in the token header; a cookie
// or a ?token= carries nothing (a cookie reaches every port of the host).
// The page itself comes without the token, but as the body of a 401 (the
// endpoint refuses like every other; the page's script fetches its data
// with the token from the URL fragment); with the token it is a 200.
func TestGuardBrowserToken(t *testing.T) {
	t.Parallel()
	reached := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Reached", name)
			w.WriteHeader(http.StatusOK)
		})
	}
	h := Guard(reached("mux"), HTTPOptions{AuthToken: "s3cret", Page: reached("dashboard")})
	for _, tc := range []struct {
		name, method, target, cookie, header string
		want                                 int
		reached                              string
	}{
		{"token header", http.MethodGet, "/status", "", "s3cret", 200, "mux"},
		{"wrong token header", http.MethodGet, "/status", "", "nope", 401, ""},
		{"cookie", http.MethodGet, "/status", "s3cret", "", 401, ""},
		{"cookie on the search", http.MethodGet, "/status/search?q=x", "s3cret", "", 401, ""},
		{"cookie on /mcp", http.MethodPost, "/mcp", "s3cret", "", 401, ""},
		{"token in the data's URL", http.MethodGet, "/status?token=s3cret", "", "", 401, ""},
		{"token in a POST's URL", http.MethodPost, "/?token=s3cret", "", "", 401, ""},
		{"page", http.MethodGet, "/", "", "", 401, "dashboard"},
		{"page with the token header", http.MethodGet, "/", "", "s3cret", 200, "dashboard"},
		{"page with a cookie", http.MethodGet, "/", "s3cret", "", 401, "dashboard"},
		{"old page link", http.MethodGet, "/?token=s3cret", "", "", 401, "dashboard"},
		{"page spelled with escapes", http.MethodGet, "/%2F", "", "", 401, ""},
		{"another GET", http.MethodGet, "/v1/models", "", "", 401, ""},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		req.Host = "127.0.0.1:8765"
		if tc.cookie != "" {
			req.AddCookie(&http.Cookie{Name: authheader.Cookie, Value: tc.cookie})
		}
		if tc.header != "" {
			req.Header.Set(authheader.Token, tc.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || rec.Header().Get("Reached") != tc.reached {
			t.Errorf("%s: got %d reaching %q, want %d reaching %q", tc.name, rec.Code, rec.Header().Get("Reached"), tc.want, tc.reached)
		}
	}
	// Without a dashboard, GET / is the gateway's and needs the token.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "127.0.0.1:8765"
	rec := httptest.NewRecorder()
	Guard(reached("mux"), HTTPOptions{AuthToken: "s3cret"}).ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("GET / without a dashboard: got %d, want 401", rec.Code)
	}
}
