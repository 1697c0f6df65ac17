// Package accesstoken accepts OAuth 2.1 access tokens issued by an
// external authorization server (issue 31): a JWT whose signature checks
// against the server's JSON Web Key Set, whose issuer and audience are the
// configured ones and which has not expired, mapped to mcproxy profiles by
// one of its claims. It also writes the protected resource metadata (RFC
// 9728) that tells a client which authorization server to ask. The JWT and
// JWKS handling is go-jose's; this package owns the policy and the JWKS
// cache. It never logs and never puts a token in an error.
package accesstoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// DefaultProfilesClaim is the claim naming a token's profiles when
// Options.ProfilesClaim is empty.
const DefaultProfilesClaim = "mcproxy_profiles"

// refetchEvery bounds how often an unknown key id fetches the key set
// again (a key rotation), so forged key ids cannot hammer the server.
const refetchEvery = 30 * time.Second

// leeway is the clock skew tolerated on exp, nbf and iat.
const leeway = time.Minute

// algorithms are the signature algorithms accepted (asymmetric only: the
// key set is public).
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// Options configure a Verifier (config oauth_resource).
type Options struct {
	// Issuer is the authorization server's issuer identifier: the "iss"
	// every token must carry, and what the metadata names. Required.
	Issuer string
	// JWKSURL is where the server publishes its key set. Required.
	JWKSURL string
	// Audience is the "aud" every token must include: mcproxy's resource
	// identifier at the authorization server. Required.
	Audience string
	// ProfilesClaim names the claim listing a token's profiles (a string
	// or an array of strings); "" means DefaultProfilesClaim.
	ProfilesClaim string
	// Client fetches the key set; nil means a client with a 10s timeout.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	opts Options

	mu      sync.Mutex
	keys    *jose.JSONWebKeySet
	fetched time.Time
}

// New returns a Verifier; it fetches the key set at the first token.
func New(opts Options) (*Verifier, error) {
	if opts.Issuer == "" || opts.JWKSURL == "" || opts.Audience == "" {
		return nil, errors.New("accesstoken: Issuer, JWKSURL and Audience are required")
	}
	if opts.ProfilesClaim == "" {
		opts.ProfilesClaim = DefaultProfilesClaim
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Verifier{opts: opts}, nil
}

// Issuer is the configured authorization server.
func (v *Verifier) Issuer() string { return v.opts.Issuer }

// Token is what an accepted access token says.
type Token struct {
	// Subject is the token's "sub".
	Subject string
	// Profiles are the profiles its claim names.
	Profiles []string
}

// Verify checks token and returns what it says. An error says why it was
// refused (never quoting the token).
func (v *Verifier) Verify(ctx context.Context, token string) (Token, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return Token{}, fmt.Errorf("not a signed JWT: %w", err)
	}
	if len(tok.Headers) != 1 {
		return Token{}, errors.New("the JWT must carry exactly one signature")
	}
	key, err := v.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return Token{}, err
	}
	var std jwt.Claims
	extra := map[string]any{}
	if err := tok.Claims(key, &std, &extra); err != nil {
		return Token{}, fmt.Errorf("the signature does not check against the authorization server's keys: %w", err)
	}
	if std.Expiry == nil {
		return Token{}, errors.New(`the token has no "exp"`)
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: v.opts.Issuer, AnyAudience: jwt.Audience{v.opts.Audience}, Time: v.opts.Now()}, leeway)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return Token{}, errors.New("the token has expired; get a new one from the authorization server")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return Token{}, fmt.Errorf("the token is not for this server: its audience does not include %q", v.opts.Audience)
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return Token{}, fmt.Errorf("the token is not from %s", v.opts.Issuer)
	case err != nil:
		return Token{}, err
	}
	var profiles []string
	switch c := extra[v.opts.ProfilesClaim].(type) {
	case string:
		profiles = []string{c}
	case []any:
		for _, p := range c {
			if s, ok := p.(string); ok {
				profiles = append(profiles, s)
			}
		}
	}
	if len(profiles) == 0 {
		return Token{}, fmt.Errorf("the token names no profile in its %q claim", v.opts.ProfilesClaim)
	}
	return Token{Subject: std.Subject, Profiles: profiles}, nil
}

// key finds the public key of kid, fetching the key set when it is not
// held yet or, at most every refetchEvery, when kid is unknown.
func (v *Verifier) key(ctx context.Context, kid string) (any, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := find(v.keys, kid); ok {
		return k, nil
	}
	if v.keys != nil && v.opts.Now().Sub(v.fetched) < refetchEvery {
		return nil, fmt.Errorf("no key %q in the authorization server's key set", kid)
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys, v.fetched = keys, v.opts.Now()
	if k, ok := find(keys, kid); ok {
		return k, nil
	}
	return nil, fmt.Errorf("no key %q in the authorization server's key set", kid)
}

// find is kid's public signing key in set (with no kid, the only key).
func find(set *jose.JSONWebKeySet, kid string) (any, bool) {
	if set == nil {
		return nil, false
	}
	var keys []jose.JSONWebKey
	if kid == "" {
		keys = set.Keys
	} else {
		keys = set.Key(kid)
	}
	keys = slices.DeleteFunc(slices.Clone(keys), func(k jose.JSONWebKey) bool { return k.Use != "" && k.Use != "sig" || !k.IsPublic() })
	if len(keys) != 1 {
		return nil, false
	}
	return keys[0].Key, true
}

// fetch reads the key set.
func (v *Verifier) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.opts.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching the authorization server's keys: %w", err)
	}
	resp, err := v.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching the authorization server's keys: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching the authorization server's keys: %s answered %s", v.opts.JWKSURL, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("reading the authorization server's keys: %w", err)
	}
	return &set, nil
}

// Metadata is the protected resource metadata (RFC 9728 §2) of resource,
// the URL of the endpoint a client reaches.
func (v *Verifier) Metadata(resource string) []byte {
	b, _ := json.Marshal(map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{v.opts.Issuer},
		"bearer_methods_supported": []string{"header"},
	})
	return b
}
