package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// authServer is a small OAuth 2.1 authorization server for the tests: it
// publishes RFC 8414 metadata, registers clients dynamically, approves
// every authorization request at once (a user who is already signed in),
// checks PKCE S256, redirect URI and resource, and issues short-lived
// access tokens with rotating refresh tokens that the test can revoke.
type authServer struct {
	srv      *httptest.Server
	resource string
	ttl      time.Duration

	mu      sync.Mutex
	clients map[string][]string // client id -> redirect URIs
	codes   map[string]authCode
	access  map[string]time.Time // token -> expiry
	refresh map[string]string    // refresh token -> client id
	grants  map[string]int       // grant type -> tokens issued
}

type authCode struct {
	client, redirect, challenge, resource string
}

func newAuthServer(t *testing.T, resource string, ttl time.Duration) *authServer {
	a := &authServer{resource: resource, ttl: ttl, clients: map[string][]string{}, codes: map[string]authCode{},
		access: map[string]time.Time{}, refresh: map[string]string{}, grants: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		base := a.srv.URL
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported":            []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RedirectURIs []string `json:"redirect_uris"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
			return
		}
		id := randomString()
		a.mu.Lock()
		a.clients[id] = req.RedirectURIs
		a.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		uris, ok := a.clients[q.Get("client_id")]
		a.mu.Unlock()
		switch {
		case !ok:
			http.Error(w, "unknown client", http.StatusBadRequest)
			return
		case !contains(uris, q.Get("redirect_uri")):
			http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
			return
		case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			http.Error(w, "PKCE S256 required", http.StatusBadRequest)
			return
		case q.Get("resource") != a.resource:
			http.Error(w, "resource "+q.Get("resource")+" is not "+a.resource, http.StatusBadRequest)
			return
		}
		code := randomString()
		a.mu.Lock()
		a.codes[code] = authCode{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		a.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		client := r.PostForm.Get("client_id")
		switch grant := r.PostForm.Get("grant_type"); grant {
		case "authorization_code":
			c, ok := a.codes[r.PostForm.Get("code")]
			delete(a.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || c.client != client || c.redirect != r.PostForm.Get("redirect_uri") ||
				base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || r.PostForm.Get("resource") != c.resource {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
		case "refresh_token":
			old := r.PostForm.Get("refresh_token")
			if a.refresh[old] != client || client == "" || r.PostForm.Get("resource") != a.resource {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked or unknown"})
				return
			}
			delete(a.refresh, old) // rotation: each refresh token works once
		default:
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		a.grants[r.PostForm.Get("grant_type")]++
		access, refresh := randomString(), randomString()
		a.access[access] = time.Now().Add(a.ttl)
		a.refresh[refresh] = client
		writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
			"expires_in": int(a.ttl / time.Second)})
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// verify is the resource server's token check.
func (a *authServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.access[token]
	if !ok || time.Now().After(exp) {
		return nil, fmt.Errorf("%w: unknown, expired or revoked", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Expiration: exp}, nil
}

// revokeAll forgets every access and refresh token, as a user revoking the
// app's access does.
func (a *authServer) revokeAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.access, a.refresh = map[string]time.Time{}, map[string]string{}
}

func (a *authServer) issued(grant string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.grants[grant]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// newProtectedServer starts an mcp-go streamable HTTP server with one tool,
// behind the Go SDK's bearer token middleware, with its RFC 9728 metadata
// naming as as its authorization server.
func newProtectedServer(t *testing.T) (*httptest.Server, func(*authServer)) {
	s := server.NewMCPServer("protected", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("vault_secret_count", mcp.WithDescription("Count the secrets stored in the vault")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("42 secrets"), nil
		})
	mux := http.NewServeMux()
	rs := httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	bind := func(as *authServer) {
		prm := rs.URL + "/.well-known/oauth-protected-resource/mcp"
		mux.Handle("GET /.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: rs.URL + "/mcp", AuthorizationServers: []string{as.srv.URL},
		}))
		mux.Handle("/mcp", auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})(
			server.NewStreamableHTTPServer(s)))
	}
	return rs, bind
}

// TestOAuthSignIn runs mcproxy against an OAuth-protected MCP server on
// loopback: the proxy starts without tokens (needs sign-in, and says which
// command to run), `mcproxy auth login` signs in through the browser
// (BROWSER), the running proxy connects without a restart, two front
// clients share the one signed-in upstream, an expired access token is
// refreshed, and revoked tokens put the server back in needs sign-in.
func TestOAuthSignIn(t *testing.T) {
	helper := oauthClient(t)
	rs, bind := newProtectedServer(t)
	const ttl = 2 * time.Second
	as := newAuthServer(t, rs.URL+"/mcp", ttl)
	bind(as)

	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{"vault": map[string]any{"url": rs.URL + "/mcp"}},
		"data_dir":   data,
		"log_level":  "debug",
	})
	// The proxy has no browser: it must wait for `mcproxy auth login`.
	t.Setenv("BROWSER", "")
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	base, proxy := serveHTTP(t, cfg)

	a := startHTTP(t, base+"/mcp")
	initialize(t, a)
	res := callTool(t, a, "call_tool", map[string]any{"name": "vault:vault_secret_count", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "needs sign-in") || !strings.Contains(text(res), "mcproxy auth login vault") {
		t.Fatalf("before sign-in: got %q (error %v), want a needs sign-in error naming `mcproxy auth login vault`", text(res), res.IsError)
	}

	login := exec.Command(binary, "auth", "login", "vault", "--config", cfg)
	login.Env = append(os.Environ(), "BROWSER="+helper+" open")
	out, err := login.CombinedOutput()
	if err != nil {
		t.Fatalf("mcproxy auth login: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Signed in to vault") {
		t.Errorf("mcproxy auth login said %q, want it to confirm the sign-in", out)
	}
	file := filepath.Join(data, "oauth", "vault.json")
	st, err := os.Stat(file)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	if n := as.issued("authorization_code"); n != 1 {
		t.Errorf("authorization code grants: got %d, want 1", n)
	}

	// The running proxy notices the tokens and connects.
	waitFor(t, 20*time.Second, "the proxy to connect after sign-in", func() bool {
		res := callTool(t, a, "call_tool", map[string]any{"name": "vault:vault_secret_count", "arguments": map[string]any{}})
		return !res.IsError && strings.Contains(text(res), "42 secrets")
	})

	// A second front client uses the same signed-in upstream.
	b := startHTTP(t, base+"/mcp")
	initialize(t, b)
	var wg sync.WaitGroup
	for _, c := range []struct {
		name string
		cl   interface {
			CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
		}
	}{{"a", a}, {"b", b}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req mcp.CallToolRequest
			req.Params.Name = "call_tool"
			req.Params.Arguments = map[string]any{"name": "vault:vault_secret_count", "arguments": map[string]any{}}
			res, err := c.cl.CallTool(context.Background(), req)
			if err != nil || res.IsError || !strings.Contains(text(res), "42 secrets") {
				t.Errorf("client %s: got %v / %v, want the tool's answer", c.name, err, res)
			}
		}()
	}
	wg.Wait()
	if n := as.issued("authorization_code"); n != 1 {
		t.Errorf("after two clients: authorization code grants %d, want still 1 (one sign-in serves every client)", n)
	}

	// Past the access token's lifetime the proxy refreshes it.
	time.Sleep(ttl + 500*time.Millisecond)
	if r := proxied(t, b, "vault:vault_secret_count", map[string]any{}); !strings.Contains(r, "42 secrets") {
		t.Errorf("after expiry: got %q", r)
	}
	if n := as.issued("refresh_token"); n < 1 {
		t.Errorf("refresh grants: got %d, want at least 1 after the access token expired", n)
	}
	saved, _ := os.ReadFile(file)
	for _, secret := range storedTokens(t, saved) {
		if strings.Contains(proxy.output(), secret) {
			t.Errorf("the proxy's log contains a stored token")
		}
	}

	// Revoked tokens: the server is back to needs sign-in.
	as.revokeAll()
	time.Sleep(ttl + 500*time.Millisecond) // the current access token expires too
	waitFor(t, 20*time.Second, "needs sign-in after revocation", func() bool {
		res := callTool(t, a, "call_tool", map[string]any{"name": "vault:vault_secret_count", "arguments": map[string]any{}})
		return res.IsError && strings.Contains(text(res), "needs sign-in") && strings.Contains(text(res), "mcproxy auth login vault")
	})

	// mcproxy auth status says what is stored, never a token.
	code, stdout, stderr := runBinary(t, 30*time.Second, "auth", "status", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "vault") {
		t.Errorf("auth status: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, _ = runBinary(t, 30*time.Second, "auth", "logout", "vault", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "Signed out of vault") {
		t.Errorf("auth logout: exit %d, %q", code, stdout)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("after logout the token file is still there (%v)", err)
	}
}

// storedTokens returns the access and refresh tokens of a token file.
func storedTokens(t *testing.T, data []byte) []string {
	var rec struct {
		Token struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"token"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.Token.AccessToken == "" || rec.Token.RefreshToken == "" {
		t.Fatalf("token file: %v, %q", err, data)
	}
	return []string{rec.Token.AccessToken, rec.Token.RefreshToken}
}
