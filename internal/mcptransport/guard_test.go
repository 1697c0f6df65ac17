package mcptransport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	tests := []struct {
		name   string
		opts   HTTPOptions
		host   string
		header map[string]string
		want   int
	}{
		{"loopback ip", HTTPOptions{}, "127.0.0.1:8765", nil, 200},
		{"loopback range", HTTPOptions{}, "127.1.2.3:8765", nil, 200},
		{"localhost", HTTPOptions{}, "localhost:8765", nil, 200},
		{"localhost upper case, no port", HTTPOptions{}, "LOCALHOST", nil, 200},
		{"ipv6 loopback", HTTPOptions{}, "[::1]:8765", nil, 200},
		{"local origin", HTTPOptions{}, "127.0.0.1:8765", map[string]string{"Origin": "http://localhost:3000"}, 200},
		{"foreign host", HTTPOptions{}, "evil.example:8765", nil, 403},
		{"rebinding host", HTTPOptions{}, "attacker.localhost.evil.example", nil, 403},
		{"lan ip host", HTTPOptions{}, "192.168.1.5:8765", nil, 403},
		{"empty host", HTTPOptions{}, "", nil, 403},
		{"foreign origin", HTTPOptions{}, "127.0.0.1:8765", map[string]string{"Origin": "https://evil.example"}, 403},
		{"null origin", HTTPOptions{}, "127.0.0.1:8765", map[string]string{"Origin": "null"}, 403},
		{"configured listen host", HTTPOptions{ListenHost: "mybox.lan"}, "mybox.lan:8765", map[string]string{"Origin": "http://mybox.lan:8765"}, 200},
		{"wildcard listen host adds nothing", HTTPOptions{ListenHost: "0.0.0.0"}, "0.0.0.0:8765", nil, 403},
		{"allowed host", HTTPOptions{ListenHost: "0.0.0.0", AllowedHosts: []string{"MCProxy.lan", "192.168.1.5"}}, "mcproxy.lan:8765", map[string]string{"Origin": "https://mcproxy.lan"}, 200},
		{"allowed lan ip", HTTPOptions{ListenHost: "0.0.0.0", AllowedHosts: []string{"mcproxy.lan", "192.168.1.5"}}, "192.168.1.5:8765", nil, 200},
		{"host not among the allowed", HTTPOptions{AllowedHosts: []string{"mcproxy.lan"}}, "other.lan:8765", nil, 403},
		{"missing bearer", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", nil, 401},
		{"wrong bearer", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", map[string]string{"Authorization": "Bearer s3cre"}, 401},
		{"basic instead of bearer", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", map[string]string{"Authorization": "Basic s3cret"}, 401},
		{"right bearer", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", map[string]string{"Authorization": "Bearer s3cret"}, 200},
		{"right bearer, lower-case scheme", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", map[string]string{"Authorization": "bearer s3cret"}, 200},
		{"right bearer, foreign origin", HTTPOptions{AuthToken: "s3cret"}, "127.0.0.1:8765", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
			req.Host = tc.host
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			Guard(ok, tc.opts).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("got status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tc.want)
			}
			if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("got 401 without WWW-Authenticate, want a Bearer challenge")
			}
			if tc.opts.AuthToken != "" && strings.Contains(rec.Body.String(), tc.opts.AuthToken) {
				t.Errorf("response body %q leaks the auth token", rec.Body.String())
			}
		})
	}
}
