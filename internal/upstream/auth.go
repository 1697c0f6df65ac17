package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mcproxy/mcproxy/internal/oauth"
)

// signInPoll is how often a server that needs sign-in checks whether
// tokens have appeared (mcproxy auth login writes them from another
// process).
const signInPoll = time.Second

// authClient is l's OAuth client, nil for stdio servers or when the
// manager has no OAuth set.
func (l *link) authClient() *oauth.Client {
	return l.m.opts.OAuth.Client(l.name, l.cfg)
}

// newHTTP is the HTTP client of one session: its own connection pool, and
// the OAuth round tripper when the server may need a sign-in.
func (l *link) newHTTP(tooLarge func(error)) *http.Client {
	hc := newHTTPClient(l.name, l.m.maxMessage, tooLarge)
	if c := l.authClient(); c != nil {
		hc.Transport = c.Wrap(hc.Transport)
	}
	return hc
}

// needsSignIn reports whether err says the server waits for a user to
// sign in, which no backoff will fix.
func needsSignIn(err error) bool {
	return errors.Is(err, oauth.ErrSignInRequired)
}

// waitSignIn waits, after an attempt failed for want of a sign-in, until
// the stored tokens change or the scheduled retry is due, whichever comes
// first. It reports false when ctx ends.
func (l *link) waitSignIn(ctx context.Context, since string) bool {
	c := l.authClient()
	l.mu.Lock()
	d := time.Until(l.retryAt)
	l.mu.Unlock()
	retry := time.NewTimer(d)
	defer retry.Stop()
	tick := time.NewTicker(signInPoll)
	defer tick.Stop()
	for {
		select {
		case <-retry.C:
			return true
		case <-tick.C:
			if c != nil && c.Stamp() != since {
				l.log.Info("new tokens stored; connecting")
				return true
			}
		case <-l.wake:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// tokenStamp is the OAuth client's token stamp ("" without one).
func (l *link) tokenStamp() string {
	if c := l.authClient(); c != nil {
		return c.Stamp()
	}
	return ""
}

// authHintError adds what to do to a 401 that reached mcp-go (a server
// that refused the config's own Authorization header without an OAuth
// challenge, or a manager without OAuth).
type authHintError struct {
	server string
	err    error
}

func (e *authHintError) Error() string {
	return e.err.Error() + fmt.Sprintf(" (HTTP 401): sign in with `mcproxy auth login %s`, or put a token in mcpServers.%s.headers "+
		`as "Authorization": "Bearer ${TOKEN}"`, e.server, e.server)
}

func (e *authHintError) Unwrap() error { return e.err }

// explainAuth wraps mcp-go's 401 errors with the hint.
func (l *link) explainAuth(err error) error {
	if errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, transport.ErrUnauthorized) {
		return &authHintError{server: l.name, err: err}
	}
	return err
}
