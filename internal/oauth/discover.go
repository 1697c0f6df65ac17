package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxDocBytes bounds a metadata document or token response.
const maxDocBytes = 1 << 20

// protocolVersion is sent on discovery requests (MCP authorization,
// "Protected Resource Metadata Discovery Requirements").
const protocolVersion = "2025-11-25"

// resourceMetadata is an RFC 9728 protected resource metadata document.
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is an RFC 8414 (or OpenID Connect Discovery) document,
// the fields a client uses.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported,omitempty"`
	GrantTypesSupported               []string `json:"grant_types_supported,omitempty"`
	// IssParameterSupported: the server puts its issuer in every
	// authorization response (RFC 9207), so a response without one is
	// refused.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported,omitempty"`

	// published is true when the server published this document (false:
	// the 2025-03-26 default endpoints were assumed).
	published bool
}

// discovery is what the client learned about a server before signing in.
type discovery struct {
	resource string          // the resource parameter value
	prm      bool            // protected resource metadata was found
	scopes   []string        // scopes_supported of the protected resource
	as       *serverMetadata // the authorization server
}

// ErrResourceMismatch is wrapped when a server's protected resource
// metadata names another resource than the server's URL: signing in would
// mint a token for that other resource, so the client refuses.
var ErrResourceMismatch = errors.New("protected resource metadata names another resource")

// discover finds the protected resource metadata (the challenge's hint,
// then the path-aware and root well-known URLs) and the authorization
// server's metadata. Without protected resource metadata it falls back to
// the 2025-03-26 rules: the server's origin is the authorization server,
// with default endpoints when it publishes no metadata either.
func (c *Client) discover(ctx context.Context, hint string) (*discovery, error) {
	server, err := url.Parse(c.serverURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the server URL: %w", err)
	}
	var candidates []string
	if hint != "" {
		candidates = append(candidates, hint)
	}
	path := strings.TrimSuffix(server.EscapedPath(), "/")
	origin := server.Scheme + "://" + server.Host
	if path != "" {
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+path)
	}
	candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")

	var prm *resourceMetadata
	var prmURL string
	for _, u := range candidates {
		var doc resourceMetadata
		ok, err := c.getJSON(ctx, u, &doc)
		if err != nil {
			return nil, fmt.Errorf("reading protected resource metadata at %s: %w", u, err)
		}
		if ok {
			prm, prmURL = &doc, u
			break
		}
	}

	d := &discovery{resource: canonicalResource(c.serverURL)}
	var issuer string
	if prm != nil {
		d.prm = true
		if prm.Resource != "" {
			if !resourceBinds(prm.Resource, c.serverURL) {
				return nil, fmt.Errorf("%w: %s says resource %q, but this server is %s; refusing to sign in (a token for it would be sent here)",
					ErrResourceMismatch, prmURL, prm.Resource, c.serverURL)
			}
			d.resource = prm.Resource
		}
		d.scopes = prm.ScopesSupported
		if len(prm.AuthorizationServers) > 0 {
			issuer = prm.AuthorizationServers[0]
		}
	}
	if issuer == "" {
		issuer = origin
	}
	as, err := c.serverMetadata(ctx, issuer)
	if err != nil {
		return nil, err
	}
	d.as = as
	return d, nil
}

// serverMetadata fetches an authorization server's metadata from the
// well-known URLs the MCP spec lists for issuer (path-aware OAuth, then
// OpenID Connect), else assumes the default endpoints under its origin.
func (c *Client) serverMetadata(ctx context.Context, issuer string) (*serverMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("authorization server %q is not an absolute URL", issuer)
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.Trim(u.EscapedPath(), "/")
	var urls []string
	if path == "" {
		urls = []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	} else {
		urls = []string{
			origin + "/.well-known/oauth-authorization-server/" + path,
			origin + "/.well-known/openid-configuration/" + path,
			origin + "/" + path + "/.well-known/openid-configuration",
		}
	}
	for _, m := range urls {
		var doc serverMetadata
		ok, err := c.getJSON(ctx, m, &doc)
		if err != nil {
			return nil, fmt.Errorf("reading authorization server metadata at %s: %w", m, err)
		}
		if !ok {
			continue
		}
		if doc.AuthorizationEndpoint == "" && doc.TokenEndpoint == "" {
			continue
		}
		if err := checkEndpoints(&doc); err != nil {
			return nil, fmt.Errorf("authorization server metadata at %s: %w", m, err)
		}
		if doc.Issuer != "" && !sameOrigin(doc.Issuer, issuer) {
			return nil, fmt.Errorf("authorization server metadata at %s declares issuer %q, on another origin than %q", m, doc.Issuer, issuer)
		}
		if doc.Issuer == "" {
			doc.Issuer = issuer
		}
		doc.published = true
		return &doc, nil
	}
	// 2025-03-26 "Fallbacks for Servers without Metadata Discovery".
	return &serverMetadata{
		Issuer:                issuer,
		AuthorizationEndpoint: origin + "/authorize",
		TokenEndpoint:         origin + "/token",
		RegistrationEndpoint:  origin + "/register",
	}, nil
}

// getJSON GETs u into v. ok is false when the server answers 4xx (there is
// no document there); other failures are errors.
func (c *Client) getJSON(ctx context.Context, u string, v any) (ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 && resp.StatusCode < 500 {
		return false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocBytes)).Decode(v); err != nil {
		return false, fmt.Errorf("decoding: %w", err)
	}
	return true, nil
}

// checkEndpoints rejects endpoints that are not http(s) URLs, so a hostile
// document cannot hand the browser a javascript: or file: URL.
func checkEndpoints(m *serverMetadata) error {
	for _, f := range []struct{ name, v string }{
		{"authorization_endpoint", m.AuthorizationEndpoint},
		{"token_endpoint", m.TokenEndpoint},
		{"registration_endpoint", m.RegistrationEndpoint},
	} {
		if f.v == "" {
			continue
		}
		u, err := url.Parse(f.v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%s %q is not an http(s) URL", f.name, f.v)
		}
	}
	return nil
}

// canonicalResource is the server URL as a resource indicator (RFC 8707):
// no fragment, no trailing slash.
func canonicalResource(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return s
	}
	u.Fragment = ""
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	return strings.TrimSuffix(u.String(), "/")
}

// resourceBinds reports whether a declared resource covers the addressed
// server URL: same scheme, host and query, and a path equal to the
// server's or a parent of it at a segment boundary (servers at /mcp often
// declare their origin).
func resourceBinds(resource, server string) bool {
	r, err1 := url.Parse(resource)
	s, err2 := url.Parse(server)
	if err1 != nil || err2 != nil {
		return resource == server
	}
	if !strings.EqualFold(r.Scheme, s.Scheme) || !strings.EqualFold(r.Host, s.Host) || r.RawQuery != s.RawQuery || r.Fragment != "" {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	sp := strings.TrimSuffix(s.EscapedPath(), "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}
