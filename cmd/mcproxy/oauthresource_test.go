package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OAuth 2.1 access tokens from an external authorization server (issue
// 31), against a local authorization server that publishes its key set
// and signs tokens: a token for a profile opens it, one for another
// profile gets 403, one with the wrong audience or expired gets 401 with
// the resource metadata's URL in WWW-Authenticate, and the protected
// resource metadata (RFC 9728) names the authorization server.
func TestOAuthAccessTokens(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
	}))
	defer as.Close()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	const audience = "https://mcproxy.test/mcp"
	token := func(aud string, exp time.Duration, profiles ...string) string {
		tok, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: as.URL, Subject: "alice", Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(time.Now().Add(exp))}).
			Claims(map[string]any{"groups": profiles}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	s := startServe(t, map[string]any{
		"auth_token": "oauth-admin-token",
		"mcpServers": map[string]any{"obs": map[string]any{"url": activityUpstream(t)}},
		"profiles": map[string]any{
			"review": map[string]any{"servers": []string{"obs"}},
			"ops":    map[string]any{"servers": []string{"obs"}},
		},
		"oauth_resource": map[string]any{"issuer": as.URL, "jwks_url": as.URL + "/jwks", "audience": audience, "profiles_claim": "groups"},
	})
	// An initialize, which a new client may send without a session.
	ping := func(profile, tok string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp/p/"+profile, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"oauth-test","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := ping("review", token(audience, time.Hour, "review")); resp.StatusCode != http.StatusOK {
		t.Errorf("a token for review on review: %d, want 200\n%s", resp.StatusCode, s.stderr.String())
	}
	if resp := ping("ops", token(audience, time.Hour, "review")); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a token for review on ops: %d, want 403", resp.StatusCode)
	}
	metadataURL := s.base + "/.well-known/oauth-protected-resource/mcp/p/review"
	for name, tok := range map[string]string{"wrong audience": token("https://other.test", time.Hour, "review"), "expired": token(audience, -time.Hour, "review")} {
		resp := ping("review", tok)
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(got, `resource_metadata="`+metadataURL+`"`) {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 pointing at %s", name, resp.StatusCode, got, metadataURL)
		}
	}
	resp, err := http.Get(metadataURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&md); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metadata: %d %v", resp.StatusCode, err)
	}
	if md.Resource != s.base+"/mcp/p/review" || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != as.URL {
		t.Errorf("metadata %+v, want the endpoint as resource and %s as its authorization server", md, as.URL)
	}
	if strings.Contains(s.stderr.String(), "eyJ") {
		t.Error("an access token is in the log")
	}
}
