package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcproxy/mcproxy/internal/config"
)

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		want   challenge
	}{
		{"none", nil, challenge{}},
		{"basic only", []string{`Basic realm="x"`}, challenge{}},
		{"hint and scope", []string{`Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", scope="a b"`},
			challenge{present: true, resourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp", scopes: []string{"a", "b"}}},
		{"insufficient scope, token values", []string{`Bearer error=insufficient_scope, scope="mcp:write"`},
			challenge{present: true, err: "insufficient_scope", scopes: []string{"mcp:write"}}},
		{"bearer after basic on one line", []string{`Basic realm="r", Bearer error="invalid_token", error_description="a \"quoted\" word"`},
			challenge{present: true, err: "invalid_token"}},
		{"second header line", []string{`Basic realm="r"`, `bearer scope="x"`}, challenge{present: true, scopes: []string{"x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.header {
				h.Add("WWW-Authenticate", v)
			}
			got := parseChallenge(h)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(challenge{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseChallenge mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceBinds(t *testing.T) {
	for _, tc := range []struct {
		resource, server string
		want             bool
	}{
		{"https://h/mcp", "https://h/mcp", true},
		{"https://h/mcp/", "https://h/mcp", true},
		{"https://h", "https://h/mcp", true},
		{"https://H/mcp", "https://h/mcp", true},
		{"https://h/m", "https://h/mcp", false},
		{"https://evil.example.com/mcp", "https://h/mcp", false},
		{"http://h/mcp", "https://h/mcp", false},
		{"https://h/mcp/deeper", "https://h/mcp", false},
	} {
		if got := resourceBinds(tc.resource, tc.server); got != tc.want {
			t.Errorf("resourceBinds(%q, %q) = %v, want %v", tc.resource, tc.server, got, tc.want)
		}
	}
}

// site is a loopback HTTP server whose handlers each test sets (a
// protected resource, its authorization server, or both); it records the
// requests it gets.
type site struct {
	srv *httptest.Server
	mux *http.ServeMux
	mu  sync.Mutex
	got []string
}

func newSite(t *testing.T) *site {
	s := &site{mux: http.NewServeMux()}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		s.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func serveJSON(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
}

func newTestClient(t *testing.T, serverURL string, oc *config.OAuthConfig, opts Options) *Client {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.ClientMetadataURL == "" {
		// Never the published document: tests stay off the internet.
		opts.ClientMetadataURL = "http://127.0.0.1:0/client-metadata.json"
	}
	c, err := New("srv", config.ServerConfig{URL: serverURL, OAuth: oc}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestDiscoverOrder checks the discovery order of the MCP spec: the path-
// aware protected resource metadata before the root one, and for an issuer
// with a path the three authorization server URLs in order, never the
// root.
func TestDiscoverOrder(t *testing.T) {
	s := newSite(t)
	origin := s.srv.URL
	s.mux.Handle("GET /.well-known/oauth-protected-resource", serveJSON(map[string]any{
		"resource": origin, "authorization_servers": []string{origin + "/tenant1"}, "scopes_supported": []string{"read"},
	}))
	s.mux.Handle("GET /tenant1/.well-known/openid-configuration", serveJSON(map[string]any{"issuer": origin + "/tenant1",
		"authorization_endpoint": origin + "/tenant1/authorize", "token_endpoint": origin + "/tenant1/token"}))

	c := newTestClient(t, origin+"/mcp", nil, Options{})
	d, err := c.discover(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if d.resource != origin || d.as.TokenEndpoint != origin+"/tenant1/token" || !cmp.Equal(d.scopes, []string{"read"}) {
		t.Errorf("got resource %q, token endpoint %q, scopes %v", d.resource, d.as.TokenEndpoint, d.scopes)
	}
	want := []string{
		"GET /.well-known/oauth-protected-resource/mcp",
		"GET /.well-known/oauth-protected-resource",
		"GET /.well-known/oauth-authorization-server/tenant1",
		"GET /.well-known/openid-configuration/tenant1",
		"GET /tenant1/.well-known/openid-configuration",
	}
	if diff := cmp.Diff(want, s.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestDiscoverRefusesAnotherResource(t *testing.T) {
	s := newSite(t)
	s.mux.Handle("GET /.well-known/oauth-protected-resource/mcp", serveJSON(map[string]any{
		"resource": "https://evil.example.com/mcp", "authorization_servers": []string{"https://evil.example.com"},
	}))
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{})
	_, err := c.discover(context.Background(), "")
	if !errors.Is(err, ErrResourceMismatch) {
		t.Fatalf("got %v, want ErrResourceMismatch", err)
	}
	for _, r := range s.requests() {
		if strings.Contains(r, "authoriz") {
			t.Errorf("after the mismatch the client still asked %s", r)
		}
	}
}

// protectedSite is a resource that answers 401 without a token and names
// itself in its metadata, on the same origin as its authorization server.
func protectedSite(t *testing.T, as map[string]any) *site {
	s := newSite(t)
	origin := s.srv.URL
	s.mux.Handle("GET /.well-known/oauth-protected-resource/mcp", serveJSON(map[string]any{
		"resource": origin + "/mcp", "authorization_servers": []string{origin},
	}))
	meta := map[string]any{"issuer": origin, "authorization_endpoint": origin + "/authorize", "token_endpoint": origin + "/token",
		"registration_endpoint": origin + "/register", "code_challenge_methods_supported": []string{"S256"}}
	for k, v := range as {
		meta[k] = v
	}
	s.mux.Handle("GET /.well-known/oauth-authorization-server", serveJSON(meta))
	guardMCP(s)
	return s
}

// guardMCP serves s's POST /mcp to the token "good" alone; any other
// request gets a 401 naming s's protected resource metadata.
func guardMCP(s *site) {
	origin := s.srv.URL
	s.mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+origin+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

func post(t *testing.T, c *Client, url string, header http.Header) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: c.Wrap(nil)}).Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	return resp, err
}

func TestNoBrowserNeedsSignIn(t *testing.T) {
	s := protectedSite(t, nil)
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{})
	_, err := post(t, c, s.srv.URL+"/mcp", nil)
	var se *SignInError
	if !errors.As(err, &se) || !errors.Is(err, ErrSignInRequired) {
		t.Fatalf("got %v, want a *SignInError", err)
	}
	if !strings.Contains(err.Error(), "mcproxy auth login srv") {
		t.Errorf("error %q does not name the command to run", err)
	}
}

func TestStaticHeaderRefused(t *testing.T) {
	s := protectedSite(t, nil)
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{})
	_, err := post(t, c, s.srv.URL+"/mcp", http.Header{"Authorization": {"Bearer stale"}})
	var he *StaticHeaderError
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want a *StaticHeaderError", err)
	}
	for _, want := range []string{"mcpServers.srv.headers", "mcproxy auth login srv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "stale") {
		t.Errorf("error %q repeats the header's token", err)
	}
}

func TestRegistrationRefused(t *testing.T) {
	s := protectedSite(t, nil)
	s.mux.Handle("POST /register", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"access_denied","error_description":"registration is closed"}`))
	}))
	opened := false
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Open: func(context.Context, string) error { opened = true; return nil }})
	_, err := post(t, c, s.srv.URL+"/mcp", nil)
	var re *RegistrationError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a *RegistrationError", err)
	}
	for _, want := range []string{"registration is closed", "mcpServers.srv.oauth.client_id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if opened {
		t.Error("the browser was opened although registration failed")
	}
	// The failed automatic sign-in is not retried on every request.
	_, err = post(t, c, s.srv.URL+"/mcp", nil)
	if !errors.Is(err, ErrSignInRequired) || !strings.Contains(err.Error(), "automatic sign-in failed") {
		t.Errorf("second request: got %v, want a needs sign-in error saying the automatic sign-in failed", err)
	}
}

func TestLoginTimeout(t *testing.T) {
	s := protectedSite(t, map[string]any{"client_id_metadata_document_supported": true})
	var shown string
	c := newTestClient(t, s.srv.URL+"/mcp", &config.OAuthConfig{
		ClientMetadataURL: "https://mcproxy.example/client.json", LoginTimeout: config.Duration(300 * time.Millisecond),
	}, Options{})
	err := c.Login(context.Background(), func(u string) { shown = u }, nil)
	var te *LoginTimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("got %v, want a *LoginTimeoutError", err)
	}
	if te.URL == "" || te.URL != shown || !strings.Contains(err.Error(), te.URL) || !strings.Contains(err.Error(), "mcproxy auth login srv") {
		t.Errorf("error %q: want the sign-in URL %q and the command to retry", err, shown)
	}
	if !strings.Contains(shown, "client_id=https%3A%2F%2Fmcproxy.example%2Fclient.json") || !strings.Contains(shown, "code_challenge_method=S256") {
		t.Errorf("sign-in URL %q: want the metadata document as client_id and PKCE S256", shown)
	}
}

func TestStoreIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	st := Files{Dir: dir}
	if st.Stamp("srv") != "" {
		t.Fatal("stamp of a missing file is not empty")
	}
	if err := st.Save("srv", &Record{Token: &Token{AccessToken: "a", RefreshToken: "r"}}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, st.path("srv"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	r, err := st.Load("srv")
	if err != nil || r.Token.RefreshToken != "r" {
		t.Fatalf("load: %v, %+v", err, r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want only srv.json (no temp files left)", len(entries))
	}
}

// TestSystemOpenerBrowser checks $BROWSER as xdg-open reads it: entries
// separated by colons, tried in order until one succeeds, with %s standing
// for the URL.
func TestSystemOpenerBrowser(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s|%s' \"$1\" \"$2\" > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BROWSER", "false:"+script+" --new-tab %s")
	open := SystemOpener()
	if open == nil {
		t.Fatal("SystemOpener is nil with BROWSER set")
	}
	if err := open(context.Background(), "http://127.0.0.1:1/x?a=b"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	if string(got) != "--new-tab|http://127.0.0.1:1/x?a=b" {
		t.Errorf("the browser got %q, want --new-tab and the URL", got)
	}
	t.Setenv("BROWSER", "false")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	if err := SystemOpener()(context.Background(), "http://x"); err == nil {
		t.Error("an opener that exits 1 reported success")
	}
}

// TestHeadlessRefreshToken checks the config's refresh_token: with no
// stored tokens and no browser, the first request trades it for an access
// token (with the pre-registered client and the resource) and goes
// through; the rotated refresh token is stored for next time.
func TestHeadlessRefreshToken(t *testing.T) {
	s := protectedSite(t, nil)
	var mu sync.Mutex
	var form map[string][]string
	var basicUser string
	s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		form = r.PostForm
		basicUser, _, _ = r.BasicAuth()
		if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != "from-another-machine" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		serveJSON(map[string]any{"access_token": "good", "token_type": "Bearer", "refresh_token": "rotated", "expires_in": 3600})(w, r)
	})
	dir := t.TempDir()
	c := newTestClient(t, s.srv.URL+"/mcp", &config.OAuthConfig{ClientID: "pre", ClientSecret: "s3cret", RefreshToken: "from-another-machine"}, Options{Dir: dir})
	resp, err := post(t, c, s.srv.URL+"/mcp", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %v %v, want 200", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if basicUser != "pre" {
		t.Errorf("client authenticated as %q, want pre (HTTP Basic, OAuth's default with a secret)", basicUser)
	}
	if got := form["resource"]; len(got) != 1 || got[0] != s.srv.URL+"/mcp" {
		t.Errorf("resource %v, want %s/mcp", got, s.srv.URL)
	}
	r, err := Files{Dir: dir}.Load("srv")
	if err != nil || r == nil || r.Token.RefreshToken != "rotated" {
		t.Fatalf("stored record %+v (%v), want the rotated refresh token", r, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "srv.json")); strings.Contains(string(data), "s3cret") {
		t.Errorf("the token file holds the client secret from the config: %s", data)
	}
}

// TestRefreshOn401 checks that a token the server refuses before its
// expiry (revoked, or the server restarted) is refreshed and the request
// retried once with the new one, with no sign-in.
func TestRefreshOn401(t *testing.T) {
	s := protectedSite(t, nil)
	var mu sync.Mutex
	refreshes := 0
	s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != "r1" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		refreshes++
		serveJSON(map[string]any{"access_token": "good", "token_type": "Bearer", "expires_in": 3600})(w, r)
	})
	dir := seedTokens(t, s, &Token{AccessToken: "revoked", RefreshToken: "r1", Expiry: time.Now().Add(time.Hour)})
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir})
	resp, err := post(t, c, s.srv.URL+"/mcp", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %v %v, want 200 after a refresh", resp, err)
	}
	mu.Lock()
	if refreshes != 1 {
		t.Errorf("refreshes: got %d, want 1", refreshes)
	}
	mu.Unlock()
	if st := c.Status(); !st.SignedIn || !st.Refreshing {
		t.Errorf("status %+v: want signed in, keeping the refresh token the server did not rotate", st)
	}
}

func TestLoginNotNeeded(t *testing.T) {
	s := newSite(t)
	s.mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{})
	if err := c.Login(context.Background(), nil, nil); !errors.Is(err, ErrNoSignIn) {
		t.Errorf("got %v, want ErrNoSignIn", err)
	}
}

// TestRefusesWithoutPKCE: metadata that does not list S256 stops the
// sign-in before the browser opens (MCP authorization, "Authorization Code
// Protection").
func TestRefusesWithoutPKCE(t *testing.T) {
	s := protectedSite(t, map[string]any{"code_challenge_methods_supported": []string{"plain"}})
	s.mux.Handle("POST /register", serveJSON(map[string]any{"client_id": "c"}))
	opened := false
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Open: func(context.Context, string) error { opened = true; return nil }})
	_, err := post(t, c, s.srv.URL+"/mcp", nil)
	if err == nil || !strings.Contains(err.Error(), "PKCE S256") {
		t.Fatalf("got %v, want a refusal naming PKCE S256", err)
	}
	if opened {
		t.Error("the browser was opened")
	}
}

// TestRefreshKeptWhenServerDown: a refresh that cannot reach the
// authorization server fails the request but keeps the refresh token; a
// refusal (invalid_grant) drops it.
func TestRefreshKeptWhenServerDown(t *testing.T) {
	s := protectedSite(t, nil)
	var down atomic.Bool
	down.Store(true)
	s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
	})
	dir := seedTokens(t, s, &Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Minute)})
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir})
	if _, err := post(t, c, s.srv.URL+"/mcp", nil); err == nil || errors.Is(err, ErrSignInRequired) {
		t.Fatalf("with the authorization server failing: got %v, want a plain error", err)
	}
	if st := c.Status(); !st.Refreshing {
		t.Fatalf("status %+v: the refresh token was dropped after a 502", st)
	}
	down.Store(false)
	if _, err := post(t, c, s.srv.URL+"/mcp", nil); !errors.Is(err, ErrSignInRequired) {
		t.Fatalf("after invalid_grant: got %v, want needs sign-in", err)
	}
	if st := c.Status(); st.Refreshing {
		t.Errorf("status %+v: the refused refresh token is still stored", st)
	}
}

// TestSetFollowsConfig: a reloaded config with the same server settings
// keeps its client (and its sign-in in progress); changed settings get a
// new one; a stdio server gets none.
func TestSetFollowsConfig(t *testing.T) {
	s := NewSet(Options{Dir: t.TempDir()})
	defer s.Close()
	a := config.ServerConfig{URL: "https://h/mcp"}
	c1 := s.Client("h", a)
	if c1 == nil || s.Client("h", config.ServerConfig{URL: "https://h/mcp"}) != c1 {
		t.Fatal("the same settings did not return the same client")
	}
	if c2 := s.Client("h", config.ServerConfig{URL: "https://h/mcp", OAuth: &config.OAuthConfig{Scopes: []string{"x"}}}); c2 == nil || c2 == c1 {
		t.Error("changed oauth settings returned the old client")
	}
	if s.Client("local", config.ServerConfig{Command: "true"}) != nil {
		t.Error("a stdio server got an OAuth client")
	}
	if s.Client("bad", config.ServerConfig{URL: "https://b/mcp", OAuth: &config.OAuthConfig{PrivateKey: "not pem"}}) != nil {
		t.Error("an unusable private key still gave a client")
	}
}

// TestSharedFileRefreshesOnce: two clients sharing a token file (two
// mcproxy processes, one per client app) whose access token has expired
// spend the rotating refresh token once; the second uses what the first
// stored.
func TestSharedFileRefreshesOnce(t *testing.T) {
	s := protectedSite(t, nil)
	var mu sync.Mutex
	valid := map[string]bool{"r1": true}
	refreshes := 0
	s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		if !valid[r.PostForm.Get("refresh_token")] {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"refresh token reused"}`))
			return
		}
		delete(valid, r.PostForm.Get("refresh_token"))
		refreshes++
		valid["r2"] = true
		time.Sleep(50 * time.Millisecond) // widen the window the lock closes
		serveJSON(map[string]any{"access_token": "good", "token_type": "Bearer", "refresh_token": "r2", "expires_in": 3600})(w, r)
	})
	dir := seedTokens(t, s, &Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Minute)})
	a := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir})
	b := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir})
	var wg sync.WaitGroup
	for _, c := range []*Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := post(t, c, s.srv.URL+"/mcp", nil); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("got %v %v, want 200", resp, err)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if refreshes != 1 {
		t.Errorf("refreshes: got %d, want 1", refreshes)
	}
}

// seedTokens stores tok for server "srv" of site s, as a dynamic client
// registered earlier, in a new directory it returns.
func seedTokens(t *testing.T, s *site, tok *Token) string {
	t.Helper()
	dir := t.TempDir()
	if err := (Files{Dir: dir}).Save("srv", &Record{
		Registration: &Registration{Issuer: s.srv.URL, ClientID: "dyn", AuthMethod: "none", Dynamic: true},
		Token:        tok,
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}
