package accesstoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// authServer is a local authorization server: it publishes its key set
// and signs tokens with its private key.
type authServer struct {
	*httptest.Server
	key *ecdsa.PrivateKey
}

func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := &authServer{key: key}
	as.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}})
	}))
	t.Cleanup(as.Close)
	return as
}

// sign issues a token with claims over the standard ones.
func (as *authServer) sign(t *testing.T, std jwt.Claims, extra map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: as.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(std).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestVerify(t *testing.T) {
	t.Parallel()
	as := newAuthServer(t)
	other := newAuthServer(t) // another server's key: a forged signature
	v, err := New(Options{Issuer: as.URL, JWKSURL: as.URL, Audience: "https://mcproxy.test/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := jwt.Claims{Issuer: as.URL, Subject: "alice", Audience: jwt.Audience{"https://mcproxy.test/mcp"}, Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	with := func(f func(*jwt.Claims)) jwt.Claims { c := good; f(&c); return c }
	profiles := map[string]any{DefaultProfilesClaim: []string{"review"}}
	for _, tc := range []struct {
		name, token, want string
	}{
		{"accepted", as.sign(t, good, profiles), ""},
		{"wrong audience", as.sign(t, with(func(c *jwt.Claims) { c.Audience = jwt.Audience{"https://other.test"} }), profiles), "audience does not include"},
		{"expired", as.sign(t, with(func(c *jwt.Claims) { c.Expiry = jwt.NewNumericDate(now.Add(-time.Hour)) }), profiles), "expired"},
		{"no expiry", as.sign(t, with(func(c *jwt.Claims) { c.Expiry = nil }), profiles), `no "exp"`},
		{"other issuer", as.sign(t, with(func(c *jwt.Claims) { c.Issuer = "https://evil.test" }), profiles), "is not from"},
		{"no profile", as.sign(t, good, nil), "names no profile"},
		{"forged signature", other.sign(t, good, profiles), "does not check"},
		{"not a JWT", "mcpt_abc", "not a signed JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), tc.token)
			if tc.want == "" {
				if err != nil || got.Subject != "alice" || len(got.Profiles) != 1 || got.Profiles[0] != "review" {
					t.Fatalf("got %+v, %v; want alice for review", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.want)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error quotes the token")
			}
		})
	}
}
