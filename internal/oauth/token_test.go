package oauth

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTokenAnswerShapes: token answers in the shapes deployed servers send
// beside RFC 6749's JSON (expires_in as a string, PayPal; a form-encoded
// body, GitHub without an Accept header) are read whole: the request goes
// through with the new token, its expiry and its scope.
func TestTokenAnswerShapes(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"expires_in as a string", "application/json",
			`{"access_token":"good","token_type":"Bearer","expires_in":"3600","scope":"read write"}`},
		{"form-encoded", "application/x-www-form-urlencoded; charset=utf-8",
			"access_token=good&token_type=bearer&expires_in=3600&scope=read+write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := protectedSite(t, nil)
			s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = w.Write([]byte(tc.body))
			})
			dir := seedTokens(t, s, &Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Minute)})
			c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir})
			resp, err := post(t, c, s.srv.URL+"/mcp", nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("got %v %v, want 200 with the refreshed token", resp, err)
			}
			st := c.Status()
			if until := time.Until(st.Expiry); until < 50*time.Minute || until > time.Hour {
				t.Errorf("expiry in %v, want about an hour (expires_in 3600)", until)
			}
			if got := strings.Join(st.Scopes, " "); got != "read write" {
				t.Errorf("scopes %q, want %q", got, "read write")
			}
			if !st.Refreshing {
				t.Error("the refresh token the answer left out was not kept")
			}
		})
	}
}
