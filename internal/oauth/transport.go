package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// ErrSignInRequired is wrapped by every *SignInError.
var ErrSignInRequired = errors.New("sign-in required")

// SignInError says a server needs a user to sign in (again) and how.
type SignInError struct {
	Server string
	// Reason says why, for the user.
	Reason string
	// URL is the sign-in page of a sign-in in progress ("" when none).
	URL string
}

func (e *SignInError) Error() string {
	msg := fmt.Sprintf("upstream %q needs sign-in (%s): run `mcproxy auth login %s`", e.Server, e.Reason, e.Server)
	if e.URL != "" {
		msg += ", or finish the sign-in already open in the browser: " + e.URL
	}
	return msg + "; it connects as soon as the tokens are stored, without a restart"
}

func (e *SignInError) Unwrap() error { return ErrSignInRequired }

// StaticHeaderError is returned when a server refuses the Authorization
// header from the config and asks for OAuth instead.
type StaticHeaderError struct {
	Server string
	Status int
}

func (e *StaticHeaderError) Error() string {
	return fmt.Sprintf("upstream %q answered HTTP %d to the Authorization header set in mcpServers.%s.headers and asks for an OAuth sign-in: "+
		"replace the token in that header with a valid one, or remove the header and run `mcproxy auth login %s`",
		e.Server, e.Status, e.Server, e.Server)
}

// ScopeError is returned when a server still answers insufficient_scope
// after mcproxy obtained every scope it asked for: signing in again would
// loop, so it does not.
type ScopeError struct {
	Server string
	Scopes []string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("upstream %q refuses the request for insufficient scope although the token grants %q; "+
		"ask the server's administrator for those scopes, or set mcpServers.%s.oauth.scopes and run `mcproxy auth login %s`",
		e.Server, strings.Join(e.Scopes, " "), e.Server, e.Server)
}

// Wrap returns a RoundTripper that authorizes requests to the server
// through base: it adds the bearer token (refreshing it before it
// expires), and on 401 or on 403 insufficient_scope refreshes or signs in
// and retries the request. A request that carries its own Authorization
// header (from the config's headers) is passed through, and a 401 to it is
// a *StaticHeaderError.
func (c *Client) Wrap(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &roundTripper{c: c, base: base}
}

type roundTripper struct {
	c    *Client
	base http.RoundTripper
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	if req.Header.Get("Authorization") != "" {
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusUnauthorized && parseChallenge(resp.Header).present {
			drain(resp)
			return nil, &StaticHeaderError{Server: c.name, Status: resp.StatusCode}
		}
		return resp, err
	}
	body, err := bufferBody(req)
	if err != nil {
		return nil, fmt.Errorf("reading the request body: %w", err)
	}
	ctx := req.Context()
	for round := 0; round < maxRounds; round++ {
		tok, err := c.access(ctx)
		if err != nil {
			return nil, err
		}
		r := req.Clone(ctx)
		r.Body = body()
		if tok != nil {
			r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		var stepUp bool
		switch resp.StatusCode {
		case http.StatusUnauthorized:
		case http.StatusForbidden:
			if ch := parseChallenge(resp.Header); ch.err != "insufficient_scope" {
				return resp, nil
			}
			stepUp = true
		default:
			return resp, nil
		}
		ch := parseChallenge(resp.Header)
		drain(resp)
		c.note(ch)
		if err := c.obtain(ctx, ch, tok, stepUp); err != nil {
			return nil, err
		}
	}
	return nil, &SignInError{Server: c.name, Reason: fmt.Sprintf("the server refused %d fresh tokens in a row", maxRounds)}
}

// obtain gets a token the server should accept after it refused tok (nil:
// none was sent): another request's new token, a refresh, the client
// credentials grant, or a sign-in in the browser.
func (c *Client) obtain(ctx context.Context, ch challenge, tok *Token, stepUp bool) error {
	if cur := c.current(); cur != tok && usable(cur) && !stepUp {
		return nil // replaced while this request was out
	}
	moved := false
	if tok != nil && !stepUp {
		moved = c.authServerMoved(ctx)
	}
	if tok != nil && !stepUp && c.invalidate(tok) && !moved {
		if nt, err := c.access(ctx); err != nil || nt != nil {
			return err // refreshed (or ctx ended)
		}
	}
	d, err := c.discovery(ctx)
	if err != nil {
		return fmt.Errorf("upstream %q asks for OAuth, but discovering how to sign in failed: %w", c.name, err)
	}
	want := c.wantScopes(d, ch, stepUp)
	if stepUp && tok != nil {
		if have := c.granted(); len(ch.scopes) > 0 && subset(ch.scopes, have) {
			return &ScopeError{Server: c.name, Scopes: have}
		}
	}
	if c.cfg.Grant == "client_credentials" {
		return c.clientCredentials(ctx, d, want)
	}
	return c.signIn(ctx, d, want)
}

// authServerMoved reads the server's protected resource metadata again
// after it refused a token, and reports whether it now names another
// authorization server than the one the stored registration and tokens
// come from. Then the old refresh token and client ID are not offered to
// anyone: the next sign-in registers with the new server (SEP-2352:
// credentials are bound to the authorization server that issued them).
func (c *Client) authServerMoved(ctx context.Context) bool {
	c.mu.Lock()
	c.disc = nil
	r := c.record()
	c.mu.Unlock()
	if r == nil || r.Registration == nil || r.Registration.Issuer == "" {
		return false
	}
	d, err := c.discovery(ctx)
	if err != nil || d.as.Issuer == r.Registration.Issuer {
		return false
	}
	c.log.Info("the server's authorization server changed; signing in and registering with the new one",
		zap.String("from", r.Registration.Issuer), zap.String("to", d.as.Issuer))
	return true
}

func subset(a, b []string) bool {
	for _, s := range a {
		if !slices.Contains(b, s) {
			return false
		}
	}
	return true
}

// clientCredentials runs the client credentials grant and stores the token.
func (c *Client) clientCredentials(ctx context.Context, d *discovery, scopes []string) error {
	c.tokMu.Lock()
	defer c.tokMu.Unlock()
	reg := &Registration{Issuer: d.as.Issuer, ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, AuthMethod: c.cfg.TokenEndpointAuthMethod}
	t, err := c.grant(ctx, d.as, reg, url.Values{"resource": {d.resource}}, scopes)
	if err != nil {
		return fmt.Errorf("upstream %q: the client credentials grant at %s failed: %w (check mcpServers.%s.oauth.client_id and its secret or key)",
			c.name, d.as.TokenEndpoint, err, c.name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.saveLocked(&Record{Resource: d.resource, Registration: stored(reg), Token: t, Granted: scopes}); err != nil {
		return err
	}
	c.log.Info("obtained a token with the client credentials grant", zap.Time("expiry", t.Expiry))
	return nil
}

// signIn joins or starts a sign-in in the browser and waits for it as
// long as ctx allows. When there is no browser, or automatic sign-in is
// suspended after one failed, it returns a *SignInError at once.
func (c *Client) signIn(ctx context.Context, d *discovery, scopes []string) error {
	c.mu.Lock()
	l := c.pending
	if l == nil {
		if c.open == nil {
			c.mu.Unlock()
			return &SignInError{Server: c.name, Reason: "no browser to open here"}
		}
		if c.suspended != "" {
			why := c.suspended
			c.mu.Unlock()
			return &SignInError{Server: c.name, Reason: why}
		}
		l = newLogin(c.loginTimeout)
		c.pending = l
		c.wg.Add(1)
		goroutine.Go(c.log, "sign-in", func() {
			defer c.wg.Done()
			defer func() {
				c.mu.Lock()
				if c.pending == l {
					c.pending = nil
				}
				c.mu.Unlock()
			}()
			defer goroutine.Recover(c.log, "sign-in", func(v any) { l.finish(goroutine.Error(v)) })
			err := c.runLogin(c.ctx, l, d, scopes, func(u string) {
				c.log.Warn("upstream needs sign-in; opening the browser (open this URL if it did not)", zap.String("url", u))
				if err := c.open(c.ctx, u); err != nil {
					c.log.Warn("could not open a browser", zap.Error(err), zap.String("command", "mcproxy auth login "+c.name))
				}
			})
			if err != nil && c.ctx.Err() == nil {
				c.mu.Lock()
				c.suspended = "the automatic sign-in failed: " + err.Error()
				c.mu.Unlock()
				c.log.Warn("automatic sign-in failed; waiting for `mcproxy auth login`", zap.Error(err))
			}
			l.finish(err)
		})
	}
	c.mu.Unlock()
	select {
	case <-l.done:
		return l.err
	case <-ctx.Done():
		return &SignInError{Server: c.name, Reason: "waiting for the browser sign-in", URL: l.authURL()}
	}
}
