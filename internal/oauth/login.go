package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// login is one sign-in in the browser; requests that need it wait on done.
type login struct {
	timeout time.Duration
	done    chan struct{}
	err     error
	once    sync.Once

	mu  sync.Mutex
	url string
}

func newLogin(timeout time.Duration) *login {
	return &login{timeout: timeout, done: make(chan struct{})}
}

func (l *login) finish(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

func (l *login) authURL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.url
}

// LoginTimeoutError is returned when the browser never came back to the
// loopback redirect.
type LoginTimeoutError struct {
	Server string
	After  time.Duration
	URL    string
}

func (e *LoginTimeoutError) Error() string {
	return fmt.Sprintf("the sign-in to upstream %q did not come back within %s (mcpServers.%s.oauth.login_timeout); "+
		"run `mcproxy auth login %s` to retry (the sign-in page was %s)", e.Server, e.After, e.Server, e.Server, e.URL)
}

// callbackResult is what the browser brought back.
type callbackResult struct {
	code string
	err  error
}

// runLogin signs in through the browser: a loopback listener for the
// redirect, the client's registration, PKCE and state, the authorization
// URL handed to show, the code exchanged for tokens, the tokens stored.
func (c *Client) runLogin(ctx context.Context, l *login, d *discovery, scopes []string, show func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if d.as.AuthorizationEndpoint == "" {
		return fmt.Errorf("the authorization server %s has no authorization_endpoint", d.as.Issuer)
	}
	if d.as.published && !slices.Contains(d.as.CodeChallengeMethodsSupported, "S256") {
		// MCP authorization, "Authorization Code Protection": without
		// PKCE S256 in the metadata the client must not proceed.
		return fmt.Errorf("the authorization server %s does not list PKCE S256 in code_challenge_methods_supported, so signing in to %q through it is not safe; ask the server's operator to enable PKCE",
			d.as.Issuer, c.name)
	}
	ln, err := c.listen()
	if err != nil {
		return fmt.Errorf("listening for the sign-in redirect: %w", err)
	}
	redirectURI := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	reg, err := c.identity(ctx, d.as, redirectURI, scopes)
	if err != nil {
		ln.Close()
		return err
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	cfg := c.oauthConfig(d.as, reg, scopes)
	cfg.RedirectURL = redirectURI
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.resource))
	l.mu.Lock()
	l.url = authURL
	l.mu.Unlock()

	results := make(chan callbackResult, 1)
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			res := callbackResult{code: r.URL.Query().Get("code")}
			switch issErr := checkIssuer(d.as, r.URL.Query()); {
			case r.URL.Query().Get("state") != state:
				http.Error(w, "This sign-in link is stale or was not started by mcproxy; start again with mcproxy auth login.", http.StatusBadRequest)
				return // a stray request: keep waiting for the real one
			case issErr != nil:
				res.err = issErr
			case r.URL.Query().Get("error") != "":
				res.err = &OAuthError{Code: r.URL.Query().Get("error"), Description: r.URL.Query().Get("error_description")}
			case res.code == "":
				res.err = errors.New("the redirect carried no code")
			}
			msg := "Signed in to " + c.name + ". You can close this tab."
			if res.err != nil {
				msg = "Sign-in to " + c.name + " failed: " + res.err.Error()
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><title>mcproxy</title><p>%s</p>", html.EscapeString(msg))
			select {
			case results <- res:
			default:
			}
		}),
	}
	serveDone := goroutine.Go(c.log, "sign-in redirect listener", func() { _ = srv.Serve(ln) })
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		<-serveDone
	}()

	show(authURL)
	var res callbackResult
	select {
	case res = <-results:
	case <-ctx.Done():
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &LoginTimeoutError{Server: c.name, After: l.timeout, URL: authURL}
		}
		return ctx.Err()
	}
	if res.err != nil {
		return fmt.Errorf("the authorization server refused the sign-in: %w", res.err)
	}
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	t, err := c.exchange(ctx, d.as, reg, cfg, res.code, verifier, d.resource)
	if err != nil {
		return fmt.Errorf("exchanging the sign-in code at %s: %w", d.as.TokenEndpoint, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := &Record{Resource: d.resource, Token: t, Granted: scopes, Registration: stored(reg)}
	if err := c.saveLocked(rec); err != nil {
		return err
	}
	c.suspended = ""
	c.log.Info("signed in", zap.Strings("scopes", scopes), zap.Time("expiry", t.Expiry))
	return nil
}

// ErrIssuerMismatch is wrapped when an authorization response does not
// name the authorization server the sign-in was started with (RFC 9207,
// SEP-2468): it may come from another server (a mix-up attack), so its
// code is never sent anywhere.
var ErrIssuerMismatch = errors.New("the authorization response's issuer is not the authorization server's")

// checkIssuer checks the iss parameter of an authorization response q
// against as's issuer, compared as exact strings (RFC 9207 section 2.4:
// no normalisation). A response without iss is refused only when as
// advertises that it sends one.
func checkIssuer(as *serverMetadata, q url.Values) error {
	iss, present := q["iss"]
	switch {
	case present && (len(iss) != 1 || iss[0] != as.Issuer):
		return fmt.Errorf("%w: it names %q, the sign-in went to %q; sign in again, and if this repeats, check mcpServers' url and the server's authorization_servers", ErrIssuerMismatch, strings.Join(iss, ","), as.Issuer)
	case !present && as.IssParameterSupported:
		return fmt.Errorf("%w: it has no iss parameter, although %s advertises authorization_response_iss_parameter_supported; sign in again, and if this repeats, ask the server's operator", ErrIssuerMismatch, as.Issuer)
	}
	return nil
}

// listen opens the loopback listener for the redirect: on the configured
// port, else the port of the stored dynamic registration (so it stays
// valid), else any free port.
func (c *Client) listen() (net.Listener, error) {
	if c.cfg.RedirectPort != 0 {
		return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(c.cfg.RedirectPort))
	}
	c.mu.Lock()
	r := c.record()
	c.mu.Unlock()
	if r != nil && r.Registration != nil && r.Registration.RedirectURI != "" {
		if u, err := url.Parse(r.Registration.RedirectURI); err == nil && u.Port() != "" {
			if ln, err := net.Listen("tcp", "127.0.0.1:"+u.Port()); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// ErrNoSignIn is returned by Login when the server accepts requests
// without signing in.
var ErrNoSignIn = errors.New("the server does not ask for a sign-in")

// Login signs in now, in the browser, whether or not the stored tokens
// still work: it asks the server what it wants (an unauthenticated
// initialize, whose 401 names the metadata and scopes), then runs the
// authorization code flow, or the client credentials grant when the config
// says so. show receives the sign-in URL before open is tried (so it can
// be printed); open may be nil.
func (c *Client) Login(ctx context.Context, show func(string), open func(context.Context, string) error) error {
	ch, open2xx, err := c.probe(ctx)
	if err != nil {
		return err
	}
	c.note(ch)
	c.mu.Lock()
	c.disc = nil
	c.mu.Unlock()
	d, err := c.discovery(ctx)
	if err != nil {
		return fmt.Errorf("discovering how to sign in to %q: %w", c.name, err)
	}
	if open2xx && !d.prm {
		// It answered without a challenge and publishes no protected
		// resource metadata: nothing says it uses OAuth.
		return ErrNoSignIn
	}
	want := c.wantScopes(d, ch, false)
	if c.cfg.Grant == "client_credentials" {
		return c.clientCredentials(ctx, d, want)
	}
	l := newLogin(c.loginTimeout)
	return c.runLogin(ctx, l, d, want, func(u string) {
		if show != nil {
			show(u)
		}
		if open != nil {
			if err := open(ctx, u); err != nil {
				c.log.Debug("opening the browser", zap.Error(err))
			}
		}
	})
}

// probe sends an unauthenticated initialize and returns the challenge of
// its 401 (or 403); ok2xx is true when the server answered it instead
// (some let initialize through and guard what follows).
func (c *Client) probe(ctx context.Context) (ch challenge, ok2xx bool, err error) {
	body := `{"jsonrpc":"2.0","id":"mcproxy-auth-probe","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcproxy","version":"auth"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.serverURL, bytes.NewReader([]byte(body)))
	if err != nil {
		return challenge{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return challenge{}, false, fmt.Errorf("reaching %s: %w", c.serverURL, err)
	}
	drain(resp)
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return parseChallenge(resp.Header), false, nil
	case resp.StatusCode/100 == 2:
		return challenge{}, true, nil
	}
	return challenge{}, false, fmt.Errorf("%s answered HTTP %d to an MCP initialize: check mcpServers.%s.url", c.serverURL, resp.StatusCode, c.name)
}
