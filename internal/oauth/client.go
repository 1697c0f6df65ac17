package oauth

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/filelock"
)

// Options tune New. The zero value stores nothing on disk and never opens
// a browser.
type Options struct {
	// Dir holds the token files, one <server>.json per server. Empty =
	// tokens are kept in memory only.
	Dir string
	// Logger receives sign-in events (never a token). nil = no logging.
	Logger *zap.Logger
	// Open shows a URL to the user, normally by opening their browser
	// (see SystemOpener). nil = a sign-in a request needs is not started:
	// the request fails with *SignInError naming the command to run.
	Open func(ctx context.Context, url string) error
	// HTTPClient makes the discovery, registration and token requests.
	// nil = a client with a 30s timeout.
	HTTPClient *http.Client
	// ClientMetadataURL is the client ID metadata document offered when a
	// server's config names none (cimd.go). Empty =
	// DefaultClientMetadataURL, which is empty too until one is hosted:
	// none offered, sign-in registers.
	ClientMetadataURL string
}

// refreshMargin is how long before expiry a token is refreshed.
const refreshMargin = 30 * time.Second

// maxRounds bounds the 401/403 rounds one request goes through.
const maxRounds = 4

// Client signs in to one server and authorizes requests to it. Its methods
// are safe for concurrent use.
type Client struct {
	name, serverURL string
	cfg             config.OAuthConfig
	key             crypto.Signer
	http            *http.Client
	st              store
	log             *zap.Logger
	open            func(context.Context, string) error
	loginTimeout    time.Duration

	ctx    context.Context // ends at Close; background sign-ins run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	tokMu sync.Mutex // serializes token refreshes and saves

	mu        sync.Mutex
	rec       *Record
	stamp     time.Time
	mem       bool // no Dir: rec lives in memory only
	disc      *discovery
	hint      string   // the last resource_metadata hint
	scopes    []string // the last challenge's scopes
	bootstrap bool     // cfg.RefreshToken was tried
	pending   *login   // the sign-in in progress
	suspended string   // why automatic sign-in stopped ("" = it may start)

	cimdURL     string    // the default client ID metadata document (cimd.go)
	cimdOK      bool      // it checked out
	cimdChecked time.Time // when it was last checked (zero: never)
}

// New returns the client for server name at sc.URL.
func New(name string, sc config.ServerConfig, opts Options) (*Client, error) {
	c := &Client{name: name, serverURL: sc.URL, http: opts.HTTPClient, log: opts.Logger, open: opts.Open,
		cimdURL: defaultMetadataURL(opts)}
	if sc.OAuth != nil {
		c.cfg = *sc.OAuth
	}
	if c.cfg.PrivateKey != "" {
		k, err := parsePrivateKey(c.cfg.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("mcpServers.%s.oauth.%w", name, err)
		}
		c.key = k
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.loginTimeout = c.cfg.LoginTimeout.Std()
	if c.loginTimeout <= 0 {
		c.loginTimeout = config.DefaultLoginTimeout
	}
	if opts.Dir == "" {
		c.mem = true
	} else {
		c.st = store{path: filepath.Join(opts.Dir, name+".json")}
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Name is the server's name in the config.
func (c *Client) Name() string { return c.name }

// Close ends a sign-in in progress and waits for it.
func (c *Client) Close() {
	c.cancel()
	c.wg.Wait()
}

// record returns the current record, reloading the file when another
// process (mcproxy auth login) rewrote it. c.mu must be held.
func (c *Client) record() *Record {
	if c.mem {
		return c.rec
	}
	if s := c.st.stamp(); !s.Equal(c.stamp) || c.rec == nil {
		r, err := c.st.load()
		if err != nil {
			c.log.Warn("token file unreadable; signing in again", zap.Error(err))
		}
		if !s.Equal(c.stamp) && !c.stamp.IsZero() && r != nil && r.Token != nil {
			c.suspended = "" // new tokens: automatic sign-in may run again
		}
		c.rec, c.stamp = r, s
	}
	return c.rec
}

// saveLocked stores r. c.mu must be held.
func (c *Client) saveLocked(r *Record) error {
	r.ServerURL = c.serverURL
	c.rec = r
	if c.mem {
		r.Updated = time.Now().UTC()
		return nil
	}
	if err := c.st.save(r); err != nil {
		return err
	}
	c.stamp = c.st.stamp()
	return nil
}

// Stamp changes whenever the stored tokens change (in this process or
// another); the zero time means none are stored.
func (c *Client) Stamp() time.Time {
	if c.mem {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.rec == nil || c.rec.Token == nil {
			return time.Time{}
		}
		return c.rec.Updated
	}
	return c.st.stamp()
}

// Logout forgets the stored tokens and registration.
func (c *Client) Logout() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rec, c.disc = nil, nil
	if c.mem {
		return nil
	}
	err := c.st.remove()
	c.stamp = c.st.stamp()
	return err
}

// Status is what Client.Status reports: never a token.
type Status struct {
	SignedIn   bool
	Expiry     time.Time // zero: no expiry known
	Refreshing bool      // a refresh token is stored
	Scopes     []string
	ClientID   string
	Issuer     string
	Updated    time.Time
}

// Status describes the stored tokens.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record()
	if r == nil {
		return Status{}
	}
	st := Status{Scopes: r.Granted, Updated: r.Updated}
	if r.Registration != nil {
		st.ClientID, st.Issuer = r.Registration.ClientID, r.Registration.Issuer
	}
	if t := r.Token; t != nil {
		st.SignedIn = t.AccessToken != "" || t.RefreshToken != ""
		st.Expiry, st.Refreshing = t.Expiry, t.RefreshToken != ""
		if t.Scope != "" {
			st.Scopes = strings.Fields(t.Scope)
		}
	}
	return st
}

// discovery returns the cached discovery, running it when needed.
func (c *Client) discovery(ctx context.Context) (*discovery, error) {
	c.mu.Lock()
	d, hint := c.disc, c.hint
	c.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := c.discover(ctx, hint)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.hint == hint {
		c.disc = d
	}
	c.mu.Unlock()
	return d, nil
}

// note remembers what a challenge said; a new metadata hint drops the
// cached discovery.
func (c *Client) note(ch challenge) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.resourceMetadata != "" && ch.resourceMetadata != c.hint {
		c.hint, c.disc = ch.resourceMetadata, nil
	}
	if len(ch.scopes) > 0 {
		c.scopes = ch.scopes
	}
}

// identity returns the client's registration at as: configured
// credentials, a client ID metadata document, a stored registration, or a
// new dynamic one (only when redirectURI is set: a refresh never
// registers).
func (c *Client) identity(ctx context.Context, as *serverMetadata, redirectURI string, scopes []string) (*Registration, error) {
	if c.cfg.ClientID != "" {
		return &Registration{Issuer: as.Issuer, ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret,
			AuthMethod: c.cfg.TokenEndpointAuthMethod, RedirectURI: redirectURI}, nil
	}
	c.mu.Lock()
	r := c.record()
	c.mu.Unlock()
	storedHere := r != nil && r.Registration != nil && r.Registration.Issuer == as.Issuer
	if redirectURI == "" && storedHere {
		// A refresh goes to the client the tokens were issued to, even
		// where a metadata document is now on offer.
		return r.Registration, nil
	}
	if as.ClientIDMetadataDocumentSupported {
		if u := c.metadataURL(ctx); u != "" {
			return &Registration{Issuer: as.Issuer, ClientID: u, AuthMethod: authNone, RedirectURI: redirectURI}, nil
		}
	}
	if storedHere && r.Registration.RedirectURI == redirectURI {
		return r.Registration, nil
	}
	if redirectURI == "" {
		return nil, errors.New("no client registration is stored for this authorization server")
	}
	return c.register(ctx, as, redirectURI, scopes)
}

// access returns the token to send, refreshing it first when it is about
// to expire; nil when there is none (or the refresh was refused). It is
// not an oauth2.ReuseTokenSource: the token lives in a file other
// processes rewrite (mcproxy auth login, a second mcproxy), so each access
// rereads it and a refresh takes the file's lock and first looks for a
// token another process stored.
func (c *Client) access(ctx context.Context) (*Token, error) {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	c.mu.Lock()
	r := c.record()
	if (r == nil || r.Token == nil) && c.cfg.RefreshToken != "" && !c.bootstrap {
		// Headless: a refresh token obtained elsewhere starts the chain.
		c.bootstrap = true
		r = &Record{Token: &Token{RefreshToken: c.cfg.RefreshToken}}
		c.rec = r
	}
	var t *Token
	if r != nil {
		t = r.Token
	}
	c.mu.Unlock()
	if t == nil {
		return nil, nil
	}
	if usable(t) {
		return t, nil
	}
	if t.RefreshToken == "" {
		return nil, nil
	}
	if !c.mem {
		// Another process sharing the file may be refreshing too: take
		// turns, and use what it stored if it did.
		if err := os.MkdirAll(filepath.Dir(c.st.path), 0o700); err != nil {
			return nil, fmt.Errorf("creating the token directory: %w", err)
		}
		unlock, err := filelock.Lock(ctx, c.st.path+".lock")
		if err != nil {
			return nil, err
		}
		defer unlock()
		c.mu.Lock()
		if r := c.record(); r != nil && r.Token != t && usable(r.Token) {
			nt := r.Token
			c.mu.Unlock()
			return nt, nil
		}
		c.mu.Unlock()
	}
	nt, err := c.refresh(ctx, t)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var oe *OAuthError
		switch {
		case errors.Is(err, errIssuerChanged):
			c.log.Info("the server's authorization server changed; signing in and registering with the new one", zap.Error(err))
		case errors.As(err, &oe):
			c.log.Warn("the authorization server refused the refresh token; signing in again", zap.Error(err))
		default:
			// The authorization server could not be asked (down,
			// unreachable): keep the refresh token for the next try.
			return nil, fmt.Errorf("upstream %q: %w", c.name, err)
		}
		c.mu.Lock()
		if c.rec != nil && c.rec.Token == t {
			nr := *c.rec
			nr.Token = nil
			if err := c.saveLocked(&nr); err != nil {
				c.log.Warn("saving tokens", zap.Error(err))
			}
		}
		c.mu.Unlock()
		return nil, nil
	}
	return nt, nil
}

// stored is what of reg goes to the token file: a dynamic registration
// whole (nothing else knows it), a configured client without its secret
// (it stays in the config).
func stored(reg *Registration) *Registration {
	if reg.Dynamic {
		return reg
	}
	return &Registration{Issuer: reg.Issuer, ClientID: reg.ClientID, AuthMethod: reg.AuthMethod, RedirectURI: reg.RedirectURI}
}

// usable reports whether t can be sent as is: it has an access token that
// is not about to expire.
func usable(t *Token) bool {
	return t != nil && t.AccessToken != "" && (t.Expiry.IsZero() || time.Until(t.Expiry) > refreshMargin)
}

// errIssuerChanged is refresh's answer when the server now names another
// authorization server than the one that issued the stored tokens.
var errIssuerChanged = errors.New("the stored tokens come from another authorization server")

// refresh trades t's refresh token for a new token and stores it.
// c.tokMu must be held. A refresh token goes only to the authorization
// server that issued it (SEP-2352): after a move it is dropped with
// errIssuerChanged, and the caller signs in at the new server.
func (c *Client) refresh(ctx context.Context, t *Token) (*Token, error) {
	d, err := c.discovery(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	r := c.record()
	c.mu.Unlock()
	if r != nil && r.Registration != nil && r.Registration.Issuer != "" && r.Registration.Issuer != d.as.Issuer {
		return nil, fmt.Errorf("%w: issued by %s, the server now names %s", errIssuerChanged, r.Registration.Issuer, d.as.Issuer)
	}
	reg, err := c.identity(ctx, d.as, "", nil)
	if err != nil {
		return nil, err
	}
	nt, err := c.grant(ctx, d.as, reg, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken}, "resource": {d.resource}}, nil)
	if err != nil {
		return nil, fmt.Errorf("refreshing the token: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	nr := Record{Resource: d.resource, Registration: stored(reg), Token: nt}
	if c.rec != nil {
		nr.Granted = c.rec.Granted
		if c.rec.Registration != nil {
			nr.Registration = c.rec.Registration
		}
	}
	if err := c.saveLocked(&nr); err != nil {
		return nil, err
	}
	c.log.Info("token refreshed", zap.Time("expiry", nt.Expiry))
	return nt, nil
}

// invalidate drops the access token t after the server refused it, so the
// next access refreshes (or signs in again). It reports whether a refresh
// token remains to try.
func (c *Client) invalidate(t *Token) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Token != t {
		return true // replaced meanwhile: retry with the new one
	}
	nr := *c.rec
	nt := *t
	nt.AccessToken = ""
	nr.Token = &nt
	if err := c.saveLocked(&nr); err != nil {
		c.log.Warn("saving tokens", zap.Error(err))
	}
	return nt.RefreshToken != ""
}

// current is the stored token, or nil.
func (c *Client) current() *Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.record(); r != nil {
		return r.Token
	}
	return nil
}

// granted is the scopes the stored token was obtained for.
func (c *Client) granted() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record()
	if r == nil {
		return nil
	}
	if r.Token != nil && r.Token.Scope != "" {
		return strings.Fields(r.Token.Scope)
	}
	return r.Granted
}

// wantScopes is what to ask for: the config's, else the challenge's, else
// the resource's scopes_supported, else none (the scope parameter is left
// out). A step-up adds the challenge's to those already granted.
func (c *Client) wantScopes(d *discovery, ch challenge, stepUp bool) []string {
	if len(c.cfg.Scopes) > 0 && !stepUp {
		return c.cfg.Scopes
	}
	var want []string
	if stepUp {
		want = append(want, c.granted()...)
	}
	switch {
	case len(ch.scopes) > 0:
		want = append(want, ch.scopes...)
	case stepUp:
	case d != nil && len(d.scopes) > 0:
		want = append(want, d.scopes...)
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// bufferBody makes req's body replayable.
func bufferBody(req *http.Request) (func() io.ReadCloser, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return func() io.ReadCloser { return http.NoBody }, nil
	}
	if req.GetBody != nil {
		return func() io.ReadCloser {
			b, err := req.GetBody()
			if err != nil {
				return io.NopCloser(bytes.NewReader(nil))
			}
			return b
		}, nil
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	return func() io.ReadCloser { return io.NopCloser(bytes.NewReader(data)) }, nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
