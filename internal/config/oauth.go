package config

import (
	"slices"
	"time"
)

// OAuthConfig is how mcproxy signs in to one remote server that requires
// OAuth (the MCP authorization spec). Every field is optional: a server
// that answers 401 is signed in to with discovery and dynamic client
// registration alone. The zero value (or no "oauth" key) means exactly that.
type OAuthConfig struct {
	// ClientID and ClientSecret are credentials registered with the
	// server's authorization server ahead of time. Empty = use a client ID
	// metadata document (ClientMetadataURL) or register dynamically.
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenEndpointAuthMethod is how the client authenticates at the token
	// endpoint: client_secret_basic, client_secret_post, private_key_jwt or
	// none. Empty = what registration returned, else what the
	// authorization server's metadata supports.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty"`
	// ClientMetadataURL is an https URL where this client's metadata
	// document is published; used as the client_id when the authorization
	// server supports client ID metadata documents. Empty = mcproxy's own
	// published document, once mcproxy has fetched it and it checks out;
	// ClientMetadataNone = never (always register).
	ClientMetadataURL string `json:"client_metadata_url,omitempty"`
	// Scopes replaces the scopes mcproxy would pick (the 401 challenge's,
	// else the server's scopes_supported). Empty = pick.
	Scopes []string `json:"scopes,omitempty"`
	// Grant is authorization_code (a user signs in; the default when
	// empty) or client_credentials (machine to machine; needs ClientID and
	// ClientSecret or PrivateKey).
	Grant string `json:"grant,omitempty"`
	// PrivateKey is a PEM private key (PKCS#8, EC P-256 or RSA) for
	// private_key_jwt client authentication. Use ${VAR} to keep it out of
	// the file. Empty = none.
	PrivateKey string `json:"private_key,omitempty"`
	// RefreshToken is a refresh token obtained elsewhere, for headless
	// machines: used when no token is stored yet. Empty = none.
	RefreshToken string `json:"refresh_token,omitempty"`
	// RedirectPort fixes the loopback port of the sign-in redirect
	// (http://127.0.0.1:PORT/callback), for clients registered with a fixed
	// redirect URI. Zero = any free port.
	RedirectPort int `json:"redirect_port,omitempty"`
	// LoginTimeout bounds how long a sign-in waits for the browser to come
	// back. Zero = DefaultLoginTimeout.
	LoginTimeout Duration `json:"login_timeout,omitempty"`
}

// ClientMetadataNone, as oauth.client_metadata_url, turns client ID
// metadata documents off for a server.
const ClientMetadataNone = "none"

// DefaultLoginTimeout is how long a sign-in waits for the browser.
const DefaultLoginTimeout = 5 * time.Minute

// OAuth grants.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// validate returns the problems with an oauth block, paths under path.
func (o *OAuthConfig) validate(path string, hasURL bool) []error {
	if o == nil {
		return nil
	}
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fieldErr(joinPath(path, field), format, args...))
	}
	if !hasURL {
		add("", "only an HTTP server (url) signs in with OAuth")
	}
	switch o.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if o.ClientID == "" {
			add("client_id", "the client_credentials grant needs a client_id registered with the authorization server")
		}
		if o.ClientSecret == "" && o.PrivateKey == "" {
			add("client_secret", "the client_credentials grant needs client_secret or private_key")
		}
	default:
		add("grant", "%q is not a grant: want authorization_code or client_credentials", o.Grant)
	}
	methods := []string{"", "client_secret_basic", "client_secret_post", "private_key_jwt", "none"}
	if !slices.Contains(methods, o.TokenEndpointAuthMethod) {
		add("token_endpoint_auth_method", "%q is not a method: want client_secret_basic, client_secret_post, private_key_jwt or none", o.TokenEndpointAuthMethod)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		add("client_secret", "needs client_id")
	}
	if o.ClientMetadataURL != "" && o.ClientMetadataURL != ClientMetadataNone {
		if msg := checkURL(o.ClientMetadataURL); msg != "" {
			add("client_metadata_url", "%s (or %q to never use a client ID metadata document)", msg, ClientMetadataNone)
		}
	}
	if o.RedirectPort < 0 || o.RedirectPort > 65535 {
		add("redirect_port", "%d is not a port (0 = any free port)", o.RedirectPort)
	}
	if o.LoginTimeout < 0 {
		add("login_timeout", "must not be negative")
	}
	return errs
}
