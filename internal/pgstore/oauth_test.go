package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// The tokens of TestOAuthRefreshOnceAcrossReplicas: distinctive, so that
// finding one in a log or an error means it leaked.
const (
	oldAccess  = "at-old-5d1c9e"
	newAccess  = "at-new-7f3a21"
	oldRefresh = "rt-one-9c2e44"
	newRefresh = "rt-two-0b6d13"
)

// authServer is a protected resource (POST /mcp, open to newAccess only)
// and its authorization server on one loopback origin. Its token endpoint
// takes oldRefresh once (rotating it) and counts the requests; the first
// answers only once another replica is seen waiting for the refresh lock,
// or another token request arrives.
type authServer struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests int           // token requests
	second   chan struct{} // closed at the second token request
}

func newAuthServer(t *testing.T, waiting func() bool) *authServer {
	a := &authServer{second: make(chan struct{})}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	origin := a.srv.URL
	serve := func(v any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", serve(map[string]any{
		"resource": origin + "/mcp", "authorization_servers": []string{origin}}))
	mux.Handle("GET /.well-known/oauth-authorization-server", serve(map[string]any{
		"issuer": origin, "authorization_endpoint": origin + "/authorize", "token_endpoint": origin + "/token",
		"code_challenge_methods_supported": []string{"S256"}}))
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+newAccess {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+origin+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		a.requests++
		n := a.requests
		a.mu.Unlock()
		if n == 1 {
			// Hold the first refresh until the other replica is blocked
			// on the lock (or, without one, is refreshing too).
			for !waiting() {
				select {
				case <-a.second:
				case <-r.Context().Done():
					return
				case <-time.After(10 * time.Millisecond):
					continue
				}
				break
			}
		} else if n == 2 {
			close(a.second)
		}
		if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != oldRefresh || n != 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"refresh token already used"}`))
			return
		}
		serve(map[string]any{"access_token": newAccess, "token_type": "Bearer", "refresh_token": newRefresh, "expires_in": 3600})(w, r)
	})
	return a
}

func (a *authServer) tokenRequests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

// TestOAuthRefreshOnceAcrossReplicas: two replicas on one database hold
// an upstream's expired access token and refresh it at once. Exactly one
// refresh request reaches the token endpoint (the rotating refresh token
// is spent once); both replicas then send the new token. No token is in
// a log or an error.
func TestOAuthRefreshOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	ra, rb := open(t, dsn), open(t, dsn)
	as := newAuthServer(t, func() bool {
		// Another session waits for an advisory lock: the other replica.
		var n int
		err := ra.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&n)
		return err == nil && n > 0
	})
	if err := ra.OAuth().Save("srv", &oauth.Record{
		ServerURL:    as.srv.URL + "/mcp",
		Registration: &oauth.Registration{Issuer: as.srv.URL, ClientID: "dyn", AuthMethod: "none", Dynamic: true},
		Token:        &oauth.Token{AccessToken: oldAccess, RefreshToken: oldRefresh, Expiry: time.Now().Add(-time.Minute)},
	}); err != nil {
		t.Fatal(err)
	}

	core, logs := observer.New(zapcore.DebugLevel)
	var clients []*oauth.Client
	for _, st := range []*Store{ra, rb} {
		c, err := oauth.New("srv", config.ServerConfig{URL: as.srv.URL + "/mcp"}, oauth.Options{
			Store: st.OAuth(), Logger: zap.New(core),
			ClientMetadataURL: "http://127.0.0.1:0/client-metadata.json", // never the published one
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		clients = append(clients, c)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, as.srv.URL+"/mcp", strings.NewReader(`{}`))
			resp, err := (&http.Client{Transport: c.Wrap(nil)}).Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("HTTP %d", resp.StatusCode)
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: got %v, want 200 with the new token", i, err)
		}
		for _, tok := range []string{oldAccess, newAccess, oldRefresh, newRefresh} {
			if err != nil && strings.Contains(err.Error(), tok) {
				t.Errorf("replica %d's error shows a token: %v", i, err)
			}
		}
	}
	if got := as.tokenRequests(); got != 1 {
		t.Errorf("got %d token requests, want exactly one refresh for both replicas", got)
	}
	rec, err := rb.OAuth().Load("srv")
	if err != nil || rec == nil || rec.Token == nil || rec.Token.RefreshToken != newRefresh {
		t.Errorf("stored record after the refresh: %+v, %v; want the rotated refresh token", rec, err)
	}
	for _, e := range logs.All() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, tok := range []string{oldAccess, newAccess, oldRefresh, newRefresh} {
			if strings.Contains(line, tok) {
				t.Errorf("a log entry shows a token: %s", line)
			}
		}
	}
}
