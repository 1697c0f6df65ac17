// Package clientauth owns who an HTTP request to mcproxy comes from and
// which profile it may use: the admin auth_token (every profile), a client
// token (internal/clienttoken, its own profiles), or nobody when no
// credential is configured. It maps the profile paths (/mcp/p/<name>,
// /sse/p/<name>) to a profile, refuses a request 401 (no, unknown, revoked
// or expired token) or 403 (a token for another profile), applies each
// token's rate limit (internal/ratelimit) as 429 with Retry-After, and puts
// the Identity in the request's context for the front, the call history
// and metrics. It names tokens, never their values, and logs nothing.
package clientauth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcproxy/mcproxy/internal/accesstoken"
	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
)

// Profile path prefixes: /mcp/p/<name> and /sse/p/<name> serve a profile.
const (
	MCPProfilePrefix = "/mcp/p/"
	SSEProfilePrefix = "/sse/p/"
)

// Identity is who made a request.
type Identity struct {
	// Profile is the profile the request uses; "" is the default profile.
	Profile string
	// Token names the client token that authorised it; "" for the admin
	// auth_token or no credential.
	Token string
	// Admin is true for the admin auth_token.
	Admin bool
}

// Labels of the identities that are no client token. Token names cannot
// hold parentheses (clienttoken), so neither is ever a token's name.
const (
	LabelAdmin     = "(admin)"
	LabelAnonymous = "(anonymous)"
)

// Label is how logs, history and metrics name the identity: the token's
// name, LabelAdmin or LabelAnonymous.
func (id Identity) Label() string {
	switch {
	case id.Token != "":
		return id.Token
	case id.Admin:
		return LabelAdmin
	}
	return LabelAnonymous
}

type ctxKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity a request's context carries; ok is
// false outside a request Handler saw.
func FromContext(ctx context.Context) (id Identity, ok bool) {
	id, ok = ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// ProfileFromPath splits a profile path into the profile and the path the
// profile's own front serves: "/mcp/p/review" is profile "review" at
// "/mcp", "/sse/p/review" at "/sse", and "/sse/p/review/message" (the
// endpoint that profile's SSE stream announces) at "/message". ok is false
// for any other path (the default profile).
func ProfileFromPath(path string) (profile, rest string, ok bool) {
	for _, p := range []struct{ prefix, base string }{{MCPProfilePrefix, "/mcp"}, {SSEProfilePrefix, "/sse"}} {
		if tail, found := strings.CutPrefix(path, p.prefix); found {
			name, sub, _ := strings.Cut(tail, "/")
			if name == "" {
				return "", "", false
			}
			if p.base == "/sse" && sub == "message" {
				return name, "/message", true
			}
			return name, p.base, true
		}
	}
	return "", "", false
}

// Options configure an Authenticator. The zero value accepts every
// request as anonymous on the default profile.
type Options struct {
	// AuthToken is the admin token (config auth_token): every profile.
	AuthToken string
	// Tokens checks client tokens; nil accepts none.
	Tokens clienttoken.Store
	// Profiles are the configured profiles (config profiles), until
	// SetProfiles replaces them.
	Profiles map[string]config.ProfileConfig
	// Limits holds the per-token rate limits; nil means no limits.
	Limits *ratelimit.Limits
	// AccessTokens, when set, checks bearer tokens that are neither a
	// client token nor auth_token as OAuth access tokens of an external
	// authorization server (config oauth_resource; *accesstoken.Verifier).
	// nil accepts none.
	AccessTokens AccessTokens
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// AccessTokens checks an OAuth access token: who it names and the
// profiles it opens, or why it is refused (never quoting the token).
type AccessTokens interface {
	Verify(ctx context.Context, token string) (accesstoken.Token, error)
	// Metadata is the protected resource metadata (RFC 9728) of the
	// endpoint at URL resource.
	Metadata(resource string) []byte
}

// MetadataPath is where the protected resource metadata of an endpoint is
// served, the endpoint's path appended (RFC 9728 §3.1):
// /.well-known/oauth-protected-resource/mcp/p/<name>.
const MetadataPath = "/.well-known/oauth-protected-resource"

// ServesMetadata reports whether path is protected resource metadata
// this Authenticator serves (with AccessTokens set, for a profile path).
func (a *Authenticator) ServesMetadata(path string) bool {
	rest, ok := strings.CutPrefix(path, MetadataPath)
	if !ok || a == nil || a.opts.AccessTokens == nil {
		return false
	}
	_, _, ok = ProfileFromPath(rest)
	return ok
}

// ServeMetadata answers a GET of MetadataPath + a profile's path with that
// endpoint's protected resource metadata. It needs no credential: it
// tells a client where to get one.
func (a *Authenticator) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, MetadataPath)
	if !a.ServesMetadata(r.URL.Path) || r.Method != http.MethodGet {
		http.Error(w, "not found: protected resource metadata is served for the profile endpoints, "+MetadataPath+"/mcp/p/<name>", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(a.opts.AccessTokens.Metadata(baseURL(r) + rest))
}

// baseURL is the scheme and host r was addressed to.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// OAuthPrefix starts the Identity.Token of an OAuth access token: the
// token's subject follows.
const OAuthPrefix = "oauth:"

// Authenticator decides who a request comes from.
type Authenticator struct {
	opts  Options
	admin [32]byte
	// profiles are the configured profiles: Options.Profiles, then each
	// SetProfiles.
	profiles atomic.Pointer[map[string]config.ProfileConfig]
}

// New returns an Authenticator.
func New(opts Options) *Authenticator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Authenticator{opts: opts}
	a.SetProfiles(opts.Profiles)
	if opts.AuthToken != "" {
		a.admin = sha256.Sum256([]byte(opts.AuthToken))
	}
	return a
}

// SetProfiles replaces the configured profiles (a config reload): requests
// from now on are checked against ps. ps must not be modified afterwards.
func (a *Authenticator) SetProfiles(ps map[string]config.ProfileConfig) {
	a.profiles.Store(&ps)
}

// Refusal is a request refused: the status to answer and a message
// saying how to correct it (never naming a token's value).
type Refusal struct {
	Status int
	Msg    string
	// RetryAfter is set on a 429.
	RetryAfter time.Duration
	// ResourceMetadata, on a 401, is the URL of the endpoint's protected
	// resource metadata (RFC 9728 §5.1), "" when none is served.
	ResourceMetadata string
}

func (r *Refusal) Error() string { return r.Msg }

// credential is the token a request carries: Authorization's bearer, or
// X-Mcproxy-Token (for model-API clients whose Authorization carries the
// provider's key).
func credential(r *http.Request) (string, bool) {
	if t := r.Header.Get(authheader.Token); t != "" {
		return t, true
	}
	return authheader.Bearer(r.Header.Get("Authorization"))
}

// Authenticate returns who r comes from for profile ("" = default). The
// credential is checked before the profile's name, so a caller without a
// good token learns nothing of which profiles exist (401 whatever the
// name); only an authenticated caller (auth_token, a live client token, or
// anyone when no credential is configured) gets 404 for a profile that is
// not configured.
func (a *Authenticator) Authenticate(r *http.Request, profile string) (Identity, *Refusal) {
	token, has := credential(r)
	if a.opts.AuthToken == "" && a.opts.Tokens == nil {
		return a.known(Identity{Profile: profile})
	}
	if has && a.opts.AuthToken != "" {
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], a.admin[:]) == 1 {
			return a.known(Identity{Profile: profile, Admin: true})
		}
	}
	if !has {
		return Identity{}, &Refusal{Status: http.StatusUnauthorized, Msg: "unauthorized: send a client token (mcproxy tokens create) or the configured auth_token as \"Authorization: Bearer <token>\""}
	}
	if a.opts.AccessTokens != nil && !strings.HasPrefix(token, clienttoken.Prefix) {
		return a.accessToken(r, token, profile)
	}
	if a.opts.Tokens == nil {
		return Identity{}, &Refusal{Status: http.StatusUnauthorized, Msg: "unauthorized: the token is not the configured auth_token"}
	}
	t, ref := a.check(token)
	if ref != nil {
		return Identity{}, ref
	}
	if profile != "" {
		if _, ok := (*a.profiles.Load())[profile]; !ok {
			return a.known(Identity{Profile: profile, Token: t.Name})
		}
	}
	if profile == "" || !t.Allows(profile) {
		where := "the default endpoint, which only auth_token may use"
		if profile != "" {
			where = fmt.Sprintf("profile %s", profile)
		}
		return Identity{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("forbidden: client token %s is not for %s; use its profile's endpoint (%s%s)", t.Name, where, MCPProfilePrefix, t.Profiles[0])}
	}
	return a.known(Identity{Profile: profile, Token: t.Name})
}

// accessToken authenticates an OAuth access token for profile: 401 when
// it is refused, 403 when it does not name profile.
func (a *Authenticator) accessToken(r *http.Request, token, profile string) (Identity, *Refusal) {
	t, err := a.opts.AccessTokens.Verify(r.Context(), token)
	if err != nil {
		return Identity{}, &Refusal{Status: http.StatusUnauthorized, Msg: "unauthorized: the access token was refused: " + err.Error()}
	}
	id := Identity{Profile: profile, Token: OAuthPrefix + t.Subject}
	if profile == "" || !slices.Contains(t.Profiles, profile) {
		if _, ok := (*a.profiles.Load())[profile]; profile != "" && !ok {
			return a.known(id)
		}
		return Identity{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("forbidden: the access token of %s is not for %s; it opens %s", t.Subject, cmp.Or(profile, "the default endpoint"), strings.Join(t.Profiles, ", "))}
	}
	return a.known(id)
}

// check looks a client token up: 401 for an unknown, revoked or expired
// one.
func (a *Authenticator) check(token string) (clienttoken.Token, *Refusal) {
	t, err := a.opts.Tokens.Check(token)
	switch {
	case errors.Is(err, clienttoken.ErrExpired):
		return t, &Refusal{Status: http.StatusUnauthorized, Msg: fmt.Sprintf("unauthorized: client token %s expired at %s; create a new one (mcproxy tokens create)", t.Name, t.Expires.Format(time.RFC3339))}
	case err != nil:
		return t, &Refusal{Status: http.StatusUnauthorized, Msg: "unauthorized: unknown or revoked client token (mcproxy tokens list shows the live ones)"}
	}
	return t, nil
}

// known refuses an authenticated identity's profile when it is not
// configured.
func (a *Authenticator) known(id Identity) (Identity, *Refusal) {
	if id.Profile != "" {
		if _, ok := (*a.profiles.Load())[id.Profile]; !ok {
			return Identity{}, &Refusal{Status: http.StatusNotFound, Msg: fmt.Sprintf("not found: no profile %q is configured (the config's profiles key)", id.Profile)}
		}
	}
	return id, nil
}

// Admit takes one call's place under id's rate limit (its profile's
// rate_limit, one bucket per token); the caller must call release when the
// call ends. The admin token and the default profile have no limit.
func (a *Authenticator) Admit(id Identity) (release func(), err error) {
	if a.opts.Limits == nil || id.Token == "" {
		return func() {}, nil
	}
	p := (*a.profiles.Load())[id.Profile]
	return a.opts.Limits.Acquire(ratelimit.Limit{
		Subject:   "client token " + id.Token,
		ConfigKey: "profiles." + id.Profile + ".rate_limit",
		Config:    p.RateLimit,
	}, a.opts.Now())
}

// Handler serves the profile paths: it authenticates each request, admits
// each POST (the requests that carry calls) under its token's rate limit,
// and hands it to next with the path
// rewritten to the base endpoint (/mcp or /sse) and the Identity in its
// context. Other paths pass through unchanged (their auth is Guard's).
func (a *Authenticator) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		profile, rest, ok := ProfileFromPath(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		id, ref := a.Authenticate(r, profile)
		if ref == nil && r.Method == http.MethodPost { // a GET is a stream, not a call
			release, err := a.Admit(id)
			if err != nil {
				ref = &Refusal{Status: http.StatusTooManyRequests, Msg: err.Error()}
				var re *ratelimit.RefusedError
				if errors.As(err, &re) {
					ref.RetryAfter = re.RetryAfter
				}
			} else {
				defer release()
			}
		}
		if ref != nil {
			if ref.Status == http.StatusUnauthorized && a.opts.AccessTokens != nil {
				ref.ResourceMetadata = baseURL(r) + MetadataPath + r.URL.Path
			}
			refuse(w, ref)
			return
		}
		r2 := r.Clone(WithIdentity(r.Context(), id))
		r2.URL.Path, r2.URL.RawPath = rest, ""
		next.ServeHTTP(w, r2)
	})
}

// Refuser answers a refused request in a format of its own. When the
// handler GatewayHandler guards implements it (*gateway.Gateway: the
// provider's JSON error), refusals go through it, so that a provider's SDK
// raises its typed error with the refusal's message; otherwise they are
// plain text.
type Refuser interface {
	Refuse(w http.ResponseWriter, r *http.Request, status int, msg string)
}

// refuse answers ref as plain text.
func refuse(w http.ResponseWriter, ref *Refusal) {
	refusalHeaders(w, ref)
	http.Error(w, ref.Msg, ref.Status)
}

// refusalHeaders sets the headers that go with ref's status.
func refusalHeaders(w http.ResponseWriter, ref *Refusal) {
	if ref.Status == http.StatusUnauthorized {
		v := `Bearer realm="mcproxy"`
		if ref.ResourceMetadata != "" {
			v += `, resource_metadata="` + ref.ResourceMetadata + `"`
		}
		w.Header().Set("WWW-Authenticate", v)
	}
	if ref.Status == http.StatusTooManyRequests {
		secs := max(1, int(math.Ceil(ref.RetryAfter.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
}

// CarriesClientToken reports whether r's mcproxy credential
// (X-Mcproxy-Token, else Authorization's bearer) is shaped like a client
// token, so that its checks are this package's rather than auth_token's.
func CarriesClientToken(r *http.Request) bool {
	t, ok := credential(r)
	return ok && strings.HasPrefix(t, clienttoken.Prefix)
}

// AuthenticateGateway returns who a model-API request carrying a client
// token comes from: the token's first profile that allows the gateway
// (profiles.<name>.gateway). An unknown, revoked or expired token gets
// 401, a token none of whose profiles allows the gateway 403 naming the
// setting.
func (a *Authenticator) AuthenticateGateway(r *http.Request) (Identity, *Refusal) {
	token, _ := credential(r)
	if a.opts.Tokens == nil {
		return Identity{}, &Refusal{Status: http.StatusUnauthorized, Msg: "unauthorized: client tokens are not served here; send the configured auth_token as X-Mcproxy-Token"}
	}
	t, ref := a.check(token)
	if ref != nil {
		return Identity{}, ref
	}
	var denied []string
	for _, name := range t.Profiles {
		p, ok := (*a.profiles.Load())[name]
		if !ok {
			continue
		}
		if p.Gateway != nil && !*p.Gateway {
			denied = append(denied, name)
			continue
		}
		return Identity{Profile: name, Token: t.Name}, nil
	}
	if len(denied) == 0 {
		return Identity{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("forbidden: client token %s is for no configured profile (%s)", t.Name, strings.Join(t.Profiles, ", "))}
	}
	return Identity{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("forbidden: client token %s may not use the model-API gateway: its profile %s sets \"gateway\": false (profiles.%s.gateway); use a token of a profile that allows the gateway, or remove that setting", t.Name, denied[0], denied[0])}
}

// GatewayHandler guards the model-API gateway for client tokens: a request
// carrying one (CarriesClientToken) is authenticated (AuthenticateGateway)
// and handed to next as a copy with the Identity in its context and the
// token taken out of its headers, so that it never reaches the model
// provider; the client's own credentials (x-api-key, an Authorization
// that is no client token) stay as they came. Other requests pass
// unchanged: their auth_token is Guard's.
func (a *Authenticator) GatewayHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !CarriesClientToken(r) {
			next.ServeHTTP(w, r)
			return
		}
		id, ref := a.AuthenticateGateway(r)
		if ref != nil {
			if rf, ok := next.(Refuser); ok {
				refusalHeaders(w, ref)
				rf.Refuse(w, r, ref.Status, ref.Msg)
				return
			}
			refuse(w, ref)
			return
		}
		r2 := r.Clone(WithIdentity(r.Context(), id))
		if t := r2.Header.Get(authheader.Token); strings.HasPrefix(t, clienttoken.Prefix) {
			r2.Header.Del(authheader.Token)
		} else {
			r2.Header.Del("Authorization") // it carried the client token
		}
		next.ServeHTTP(w, r2)
	})
}
