package oauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Token endpoint client authentication methods (RFC 7591 §2, RFC 7523).
const (
	authBasic = "client_secret_basic"
	authPost  = "client_secret_post"
	authJWT   = "private_key_jwt"
	authNone  = "none"
)

// OAuthError is an error response from the authorization server (RFC 6749
// §5.2).
type OAuthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
	Status      int    `json:"-"`
}

func (e *OAuthError) Error() string {
	msg := e.Code
	if e.Description != "" {
		msg += ": " + e.Description
	}
	if e.Status != 0 {
		msg = fmt.Sprintf("HTTP %d, %s", e.Status, msg)
	}
	return msg
}

// tokenContext makes x/oauth2 send its token requests through c.http, so
// the caller's timeout and transport apply.
func (c *Client) tokenContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.http)
}

// oauthConfig describes reg at as to x/oauth2: the endpoints, the scopes,
// and how the client authenticates at the token endpoint (authMethod).
// The style is always set: x/oauth2's auto-detection would send a secret
// both ways when the first is refused.
func (c *Client) oauthConfig(as *serverMetadata, reg *Registration, scopes []string) *oauth2.Config {
	cfg := &oauth2.Config{ClientID: reg.ClientID, RedirectURL: reg.RedirectURI, Scopes: scopes, Endpoint: oauth2.Endpoint{
		AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	switch c.authMethod(as, reg) {
	case authBasic:
		// x/oauth2 form-encodes both before Basic encoding (RFC 6749 §2.3.1).
		cfg.ClientSecret, cfg.Endpoint.AuthStyle = reg.ClientSecret, oauth2.AuthStyleInHeader
	case authPost:
		cfg.ClientSecret = reg.ClientSecret
	}
	return cfg
}

// assertion is what private_key_jwt adds to a token request (RFC 7523
// §2.2): a client assertion signed now, so it is fresh however long the
// user took in the browser. nil for the other methods.
func (c *Client) assertion(as *serverMetadata, reg *Registration) (url.Values, error) {
	if c.authMethod(as, reg) != authJWT {
		return nil, nil
	}
	a, err := c.clientAssertion(reg.ClientID, as)
	if err != nil {
		return nil, err
	}
	return url.Values{"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {a}}, nil
}

// exchange trades the sign-in's code for a token (Config.Exchange), with
// the PKCE verifier and the resource (RFC 8707 §2.2).
func (c *Client) exchange(ctx context.Context, as *serverMetadata, reg *Registration, cfg *oauth2.Config, code, verifier, resource string) (*Token, error) {
	extra, err := c.assertion(as, reg)
	if err != nil {
		return nil, err
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource)}
	for k := range extra {
		opts = append(opts, oauth2.SetAuthURLParam(k, extra.Get(k)))
	}
	t, err := cfg.Exchange(c.tokenContext(ctx), code, opts...)
	return ourToken(as.TokenEndpoint, t, err)
}

// grant runs a grant other than the code exchange: client credentials, or
// the refresh when params name grant_type refresh_token. Both go through
// clientcredentials.Config, whose EndpointParams may replace grant_type
// and add the resource; oauth2.Config.TokenSource's refresh sends neither
// extra parameters nor a client assertion, and the MCP spec wants the
// resource on every token request. x/oauth2 keeps the refresh token a
// refresh answer leaves out.
func (c *Client) grant(ctx context.Context, as *serverMetadata, reg *Registration, params url.Values, scopes []string) (*Token, error) {
	cfg := c.oauthConfig(as, reg, scopes)
	extra, err := c.assertion(as, reg)
	if err != nil {
		return nil, err
	}
	maps.Copy(params, extra)
	cc := clientcredentials.Config{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL,
		AuthStyle: cfg.Endpoint.AuthStyle, Scopes: scopes, EndpointParams: params}
	t, err := cc.Token(c.tokenContext(ctx))
	return ourToken(as.TokenEndpoint, t, err)
}

// ourToken maps x/oauth2's answer from tokenURL to ours: the server's
// refusal is an *OAuthError (the caller drops what was refused); a server
// that failed (5xx) or could not be reached is a plain error, so callers
// keep what they have and try again later.
func ourToken(tokenURL string, t *oauth2.Token, err error) (*Token, error) {
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		status := re.Response.StatusCode
		if re.ErrorCode != "" {
			return nil, &OAuthError{Code: re.ErrorCode, Description: re.ErrorDescription, Status: status}
		}
		if status/100 == 5 {
			return nil, fmt.Errorf("token endpoint %s answered HTTP %d: %s", tokenURL, status, firstBytes(re.Body, 200))
		}
		return nil, &OAuthError{Code: "http_error", Description: firstBytes(re.Body, 200), Status: status}
	case err != nil:
		return nil, fmt.Errorf("token endpoint %s: %w", tokenURL, err)
	}
	scope, _ := t.Extra("scope").(string)
	return &Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry, Scope: scope}, nil
}

func firstBytes(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "..."
	}
	return s
}

// authMethod picks how the client authenticates at the token endpoint:
// the configured method, else the registration's, else from what the
// server supports (Basic is OAuth's default for a secret).
func (c *Client) authMethod(as *serverMetadata, reg *Registration) string {
	if m := c.cfg.TokenEndpointAuthMethod; m != "" {
		return m
	}
	if reg.AuthMethod != "" {
		return reg.AuthMethod
	}
	if c.key != nil {
		return authJWT
	}
	if reg.ClientSecret == "" {
		return authNone
	}
	sup := as.TokenEndpointAuthMethodsSupported
	if slices.Contains(sup, authPost) && !slices.Contains(sup, authBasic) {
		return authPost
	}
	return authBasic
}

// clientAssertion is a signed JWT (RFC 7523 §2.2) naming the client as
// issuer and subject and the authorization server's issuer as audience.
// It stays ours: golang.org/x/oauth2/jwt runs the jwt-bearer grant
// (§2.1), not client authentication, and x/oauth2/jws is deprecated and
// signs with RSA only, where ES256 keys are accepted here.
func (c *Client) clientAssertion(clientID string, as *serverMetadata) (string, error) {
	if c.key == nil {
		return "", errors.New("private_key_jwt needs mcpServers.<name>.oauth.private_key")
	}
	var alg string
	switch k := c.key.(type) {
	case *ecdsa.PrivateKey:
		alg = "ES256"
		if k.Curve.Params().BitSize != 256 {
			return "", fmt.Errorf("private_key: an EC key must be P-256 for ES256, not %s", k.Curve.Params().Name)
		}
	case *rsa.PrivateKey:
		alg = "RS256"
	default:
		return "", fmt.Errorf("private_key: %T keys are not supported (want EC P-256 or RSA)", c.key)
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	now := time.Now()
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": clientID, "sub": clientID, "aud": as.Issuer,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := c.key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", fmt.Errorf("signing the client assertion: %w", err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	case *rsa.PrivateKey:
		var err error
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		if err != nil {
			return "", fmt.Errorf("signing the client assertion: %w", err)
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// parsePrivateKey reads a PEM PKCS#8 (or SEC 1 EC, or PKCS#1 RSA) key.
func parsePrivateKey(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("private_key is not PEM")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if sg, ok := k.(crypto.Signer); ok {
			return sg, nil
		}
		return nil, fmt.Errorf("private_key: %T is not a signing key", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("private_key: not a PKCS#8, EC or PKCS#1 private key")
}

// RegistrationError is returned when the authorization server refuses to
// register mcproxy (or offers no way to), with what the user can do.
type RegistrationError struct {
	Server string
	Issuer string
	Err    error
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("the authorization server %s of upstream %q did not register mcproxy as a client (%v); "+
		"register a client there by hand (redirect URI http://127.0.0.1:PORT/callback, with PORT set in "+
		"mcpServers.%s.oauth.redirect_port) and put its id (and secret) in mcpServers.%s.oauth.client_id / client_secret",
		e.Issuer, e.Server, e.Err, e.Server, e.Server)
}

func (e *RegistrationError) Unwrap() error { return e.Err }

// register performs dynamic client registration (RFC 7591) for a public
// (or, when the server supports no public clients, confidential) client
// with the given redirect URI.
func (c *Client) register(ctx context.Context, as *serverMetadata, redirectURI string, scopes []string) (*Registration, error) {
	if as.RegistrationEndpoint == "" {
		return nil, &RegistrationError{Server: c.name, Issuer: as.Issuer, Err: errors.New("it offers no dynamic client registration")}
	}
	method := authNone
	if sup := as.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !slices.Contains(sup, authNone) {
		method = authBasic
		if !slices.Contains(sup, authBasic) && slices.Contains(sup, authPost) {
			method = authPost
		}
	}
	body := map[string]any{
		"client_name": "mcproxy",
		// SEP-837: mcproxy runs on the user's machine and takes the
		// redirect on a loopback port, an OpenID Connect "native" client.
		"application_type":           "native",
		"redirect_uris":              []string{redirectURI},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	}
	if len(scopes) > 0 {
		body["scope"] = strings.Join(scopes, " ")
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &RegistrationError{Server: c.name, Issuer: as.Issuer, Err: err}
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if resp.StatusCode/100 != 2 {
		var oe OAuthError
		if json.Unmarshal(out, &oe) == nil && oe.Code != "" {
			oe.Status = resp.StatusCode
			return nil, &RegistrationError{Server: c.name, Issuer: as.Issuer, Err: &oe}
		}
		return nil, &RegistrationError{Server: c.name, Issuer: as.Issuer, Err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, firstBytes(out, 200))}
	}
	var rr struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := json.Unmarshal(out, &rr); err != nil || rr.ClientID == "" {
		return nil, &RegistrationError{Server: c.name, Issuer: as.Issuer, Err: errors.New("its answer has no client_id")}
	}
	reg := &Registration{Issuer: as.Issuer, ClientID: rr.ClientID, ClientSecret: rr.ClientSecret, AuthMethod: rr.AuthMethod,
		RedirectURI: redirectURI, Dynamic: true}
	if reg.AuthMethod == "" && reg.ClientSecret == "" {
		reg.AuthMethod = authNone
	}
	return reg, nil
}
