package oauth

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// A client ID metadata document (draft-ietf-oauth-client-id-metadata-
// document; the MCP spec's preferred registration since 2025-11-25) is an
// https URL that is the client ID, where the client publishes its
// metadata. The authorization server fetches it, so the client needs no
// registration per server. mcproxy runs on the user's machine and serves
// no https URL the server could reach, so the project publishes one
// document for every copy (docs/client-metadata.json, its redirect URI
// the loopback callback, which an authorization server must accept on any
// port: RFC 8252 section 7.3), to be offered to every server that supports
// such documents unless the config names another or "none", once it is
// fetched and found to be the document expected.
//
// It is not hosted anywhere the project controls yet, so there is no
// default (DefaultClientMetadataURL is empty) and sign-in registers
// dynamically unless the config names a document. Offering a URL on a
// host the project does not hold would let whoever takes that host own the
// client identity every mcproxy user consents to: an authorization server
// that remembers the consent would then grant it silently to that owner's
// own redirect URIs.

// DefaultClientMetadataURL is where mcproxy's client ID metadata document
// is published: empty until the project hosts docs/client-metadata.json
// at an https URL it controls.
const DefaultClientMetadataURL = ""

// cimdRetry is how long a failed check of the default document holds
// before a sign-in checks it again.
const cimdRetry = 10 * time.Minute

// cimdCheckTimeout bounds the fetch of the default document.
const cimdCheckTimeout = 5 * time.Second

// clientMetadataDoc is the part of a client ID metadata document mcproxy
// checks.
type clientMetadataDoc struct {
	ClientID     string   `json:"client_id"`
	RedirectURIs []string `json:"redirect_uris"`
}

// metadataURL is the client ID metadata document to offer an authorization
// server that supports them: the configured one, else the default once it
// checks out; "" = none (register instead).
func (c *Client) metadataURL(ctx context.Context) string {
	switch c.cfg.ClientMetadataURL {
	case config.ClientMetadataNone:
		return ""
	case "":
		if c.cimdURL == "" {
			return "" // none published: register
		}
	default:
		return c.cfg.ClientMetadataURL
	}
	c.mu.Lock()
	ok, checked := c.cimdOK, c.cimdChecked
	c.mu.Unlock()
	if ok {
		return c.cimdURL
	}
	if !checked.IsZero() && time.Since(checked) < cimdRetry {
		return ""
	}
	err := c.checkMetadata(ctx, c.cimdURL)
	c.mu.Lock()
	c.cimdOK, c.cimdChecked = err == nil, time.Now()
	c.mu.Unlock()
	if err != nil {
		c.log.Info("mcproxy's client ID metadata document could not be used; registering dynamically instead",
			zap.String("url", c.cimdURL), zap.Error(err))
		return ""
	}
	return c.cimdURL
}

// checkMetadata fetches the document at u and checks that it names u as
// its client ID and lists the loopback callback mcproxy's sign-in uses.
func (c *Client) checkMetadata(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, cimdCheckTimeout)
	defer cancel()
	var doc clientMetadataDoc
	ok, err := c.getJSON(ctx, u, &doc)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s is not published", u)
	case doc.ClientID != u:
		return fmt.Errorf("the document at %s names client_id %q, not its own URL", u, doc.ClientID)
	case !slices.ContainsFunc(doc.RedirectURIs, loopbackCallback):
		return fmt.Errorf("the document at %s lists no http://127.0.0.1/callback redirect URI (it lists %q)", u, doc.RedirectURIs)
	}
	return nil
}

// loopbackCallback reports whether raw is mcproxy's sign-in redirect on
// some (or no) port.
func loopbackCallback(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "http" && u.Hostname() == "127.0.0.1" && u.Path == "/callback"
}

// defaultMetadataURL is Options.ClientMetadataURL or the published one.
func defaultMetadataURL(opts Options) string {
	if opts.ClientMetadataURL != "" {
		return opts.ClientMetadataURL
	}
	return DefaultClientMetadataURL
}
