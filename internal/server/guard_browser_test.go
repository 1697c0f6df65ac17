package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The dashboard's browser carries auth_token in a cookie, or as ?token=
// when the page itself is opened; nothing else takes it from the URL.
func TestGuardBrowserToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := Guard(ok, HTTPOptions{AuthToken: "s3cret"})
	for _, tc := range []struct {
		name, method, target, cookie string
		want                         int
	}{
		{"cookie", http.MethodGet, "/status", "s3cret", 200},
		{"wrong cookie", http.MethodGet, "/status", "nope", 401},
		{"page with token", http.MethodGet, "/?token=s3cret", "", 200},
		{"page with a wrong token", http.MethodGet, "/?token=nope", "", 401},
		{"token in another path's URL", http.MethodGet, "/status?token=s3cret", "", 401},
		{"token in a POST's URL", http.MethodPost, "/?token=s3cret", "", 401},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		req.Host = "127.0.0.1:8765"
		if tc.cookie != "" {
			req.AddCookie(&http.Cookie{Name: CookieToken, Value: tc.cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, rec.Code, tc.want)
		}
	}
}
