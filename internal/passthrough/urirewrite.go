package passthrough

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// Resource URIs pass through as the servers send them, except when two
// servers claim the same one (issue #15: "Resource URIs are never rewritten
// unless two servers claim the same URI"). Then the server that came up
// first keeps the URI, so a server coming up never changes a URI a client
// already holds, and the later server's is exposed as
//
//	mcproxy://<server>/<the URI as the server sent it>
//
// (a URI template likewise). The rewrite is reversible by its form alone:
// a read, subscription or completion of such a URI goes to <server> with
// the original URI, and what comes back from that server (the contents of
// a read, resource_links and embedded resources in its tool results) is
// rewritten the same way wherever its URI would otherwise lead to the other
// server. The server name, not the "prefix" key, goes in the URI: a prefix
// such as "gh__" cannot stand in a URI scheme. A server with "prefix": ""
// asked for its names exactly as it sends them, so its colliding URIs are
// withheld and logged instead, as its colliding prompts are.

// rewrittenScheme opens every URI the front rewrote.
const rewrittenScheme = "mcproxy://"

// rewriteURI is uri of server as exposed after a collision.
func rewriteURI(server, uri string) string { return rewrittenScheme + server + "/" + uri }

// splitRewritten undoes rewriteURI by the URI's form alone.
func splitRewritten(uri string) (server, orig string, ok bool) {
	rest, ok := strings.CutPrefix(uri, rewrittenScheme)
	if !ok {
		return "", "", false
	}
	server, orig, ok = strings.Cut(rest, "/")
	if !ok || server == "" || orig == "" {
		return "", "", false
	}
	return server, orig, true
}

// claim decides the exposed form of a URI (or URI template) that server
// offers, given owners (exposed form → server) of the servers before it.
// It reports false when the URI is not exposed: the server listed it
// twice, or it collides and cannot be rewritten (the collision is logged).
// c.mu must be held.
func (c *catalogFront) claim(kind, uri, server, prefix string, owners map[string]string) (string, bool) {
	keeper, taken := owners[uri]
	if !taken {
		return uri, true
	}
	if keeper == server {
		return "", false
	}
	if prefix == "" {
		c.withhold(kind, uri, keeper, server)
		return "", false
	}
	exposed := rewriteURI(server, uri)
	if other, taken := owners[exposed]; taken {
		c.withhold(kind, exposed, other, server)
		return "", false
	}
	key := "rewrite\x00" + kind + "\x00" + uri + "\x00" + server
	if !c.withheld[key] {
		c.withheld[key] = true
		c.log.Info(fmt.Sprintf("%s %q of server %q is also offered by server %q, which keeps it; %q's is exposed as %q",
			kind, uri, server, keeper, server, exposed), zap.String("upstream", server), zap.String("kept_by", keeper))
	}
	return exposed, true
}

// rewriteTemplate is t exposed as the template text exposed (t itself when
// that is its own text).
func rewriteTemplate(t mcp.ResourceTemplate, exposed string) (mcp.ResourceTemplate, error) {
	if exposed == templateKey(t) {
		return t, nil
	}
	raw, err := json.Marshal(exposed)
	if err != nil {
		return t, err
	}
	u := new(mcp.URITemplate)
	if err := u.UnmarshalJSON(raw); err != nil {
		return t, err
	}
	out := t
	out.URITemplate = u
	return out, nil
}

// resolve finds the server that answers for an exposed URI and the URI to
// ask it for.
func (c *catalogFront) resolve(uri string) (server, orig string, ok bool) {
	if s, o, ok := splitRewritten(uri); ok && c.rewritable(s) {
		return s, o, true
	}
	server, ok = c.owner(uri)
	return server, uri, ok
}

// rewritable reports whether server is up and may have its URIs rewritten.
func (c *catalogFront) rewritable(server string) bool {
	c.mu.RLock()
	_, up := c.catalogs[server]
	c.mu.RUnlock()
	return up && c.prefix(server) != ""
}

// claimantLocked is the server that lists uri or whose template matches
// it. c.mu must be held.
func (c *catalogFront) claimantLocked(uri string) (string, bool) {
	if s, ok := c.uris[uri]; ok {
		return s, true
	}
	for _, t := range c.tmpls {
		if t.tmpl.URITemplate != nil && t.tmpl.URITemplate.Regexp().MatchString(uri) {
			return t.server, true
		}
	}
	return "", false
}

// exposedURI is a URI that server returned as the client must see it: as
// sent, unless it would lead to another server.
func (c *catalogFront) exposedURI(server, uri string) string {
	if uri == "" || c.prefix(server) == "" {
		return uri
	}
	c.mu.RLock()
	other, ok := c.claimantLocked(uri)
	c.mu.RUnlock()
	if ok && other != server {
		return rewriteURI(server, uri)
	}
	return uri
}

// exposeLinks returns res with the URIs of its resource_links and embedded
// resources as the client must see them; res itself when none changes (it
// is never modified).
func (c *catalogFront) exposeLinks(server string, res *mcp.CallToolResult) *mcp.CallToolResult {
	if res == nil {
		return nil
	}
	var out []mcp.Content
	for i, ct := range res.Content {
		n, changed := c.exposeContent(server, ct)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(res.Content)
		}
		out[i] = n
	}
	if out == nil {
		return res
	}
	cp := *res
	cp.Content = out
	return &cp
}

func (c *catalogFront) exposeContent(server string, ct mcp.Content) (mcp.Content, bool) {
	switch v := ct.(type) {
	case mcp.ResourceLink:
		if u := c.exposedURI(server, v.URI); u != v.URI {
			v.URI = u
			return v, true
		}
	case *mcp.ResourceLink:
		if u := c.exposedURI(server, v.URI); u != v.URI {
			cp := *v
			cp.URI = u
			return cp, true
		}
	case mcp.EmbeddedResource:
		if rc, ok := c.exposeContents(server, v.Resource, ""); ok {
			v.Resource = rc
			return v, true
		}
	case *mcp.EmbeddedResource:
		if rc, ok := c.exposeContents(server, v.Resource, ""); ok {
			cp := *v
			cp.Resource = rc
			return cp, true
		}
	}
	return ct, false
}

// exposeContents rewrites the URI of resource contents from server; asked,
// when set, is the exposed URI the client read, which contents of the URI
// it stands for take.
func (c *catalogFront) exposeContents(server string, rc mcp.ResourceContents, asked string) (mcp.ResourceContents, bool) {
	uri := resourceURI(rc)
	exposed := c.exposedURI(server, uri)
	if asked != "" {
		if s, o, ok := splitRewritten(asked); ok && s == server && o == uri {
			exposed = asked
		}
	}
	if exposed == uri {
		return rc, false
	}
	// A copy in any case: rc stays as the upstream sent it.
	switch v := rc.(type) {
	case *mcp.TextResourceContents:
		rc = *v
	case *mcp.BlobResourceContents:
		rc = *v
	}
	switch v := rc.(type) {
	case mcp.TextResourceContents:
		v.URI = exposed
		return v, true
	case mcp.BlobResourceContents:
		v.URI = exposed
		return v, true
	}
	return rc, false
}
