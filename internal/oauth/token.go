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
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
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

// tokenRequest posts form to the token endpoint with the client's
// authentication and decodes the token.
func (c *Client) tokenRequest(ctx context.Context, as *serverMetadata, reg *Registration, form url.Values) (*Token, error) {
	method := c.authMethod(as, reg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.TokenEndpoint, nil)
	if err != nil {
		return nil, err
	}
	switch method {
	case authBasic:
		// RFC 6749 §2.3.1: both are form-encoded before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret))
	case authPost:
		form.Set("client_id", reg.ClientID)
		form.Set("client_secret", reg.ClientSecret)
	case authJWT:
		assertion, err := c.clientAssertion(reg.ClientID, as)
		if err != nil {
			return nil, err
		}
		form.Set("client_id", reg.ClientID)
		form.Set("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
		form.Set("client_assertion", assertion)
	default:
		form.Set("client_id", reg.ClientID)
	}
	body := form.Encode()
	req.Body = io.NopCloser(strings.NewReader(body))
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token endpoint %s: %w", as.TokenEndpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocBytes))
	if err != nil {
		return nil, fmt.Errorf("token endpoint %s: %w", as.TokenEndpoint, err)
	}
	var oe OAuthError
	if json.Unmarshal(data, &oe) == nil && oe.Code != "" {
		oe.Status = resp.StatusCode
		return nil, &oe
	}
	if resp.StatusCode/100 == 5 {
		// The server failed, it did not refuse: not an OAuthError, so
		// callers keep what they have and try again later.
		return nil, fmt.Errorf("token endpoint %s answered HTTP %d: %s", as.TokenEndpoint, resp.StatusCode, firstBytes(data, 200))
	}
	if resp.StatusCode/100 != 2 {
		return nil, &OAuthError{Code: "http_error", Description: firstBytes(data, 200), Status: resp.StatusCode}
	}
	var tr struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("decoding the token response: %w", err)
	}
	if tr.AccessToken == "" {
		return nil, errors.New("the token response has no access_token")
	}
	t := &Token{AccessToken: tr.AccessToken, TokenType: tr.TokenType, RefreshToken: tr.RefreshToken, Scope: tr.Scope}
	if tr.ExpiresIn > 0 {
		t.Expiry = time.Now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	}
	return t, nil
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
		"client_name":                "mcproxy",
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

// pkce returns a fresh code verifier and its S256 challenge (RFC 7636).
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// randomState is an unguessable state parameter.
func randomState() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
