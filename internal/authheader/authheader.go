// Package authheader names where mcproxy's own credentials travel on an
// HTTP request and removes them from a header, so that the front's guard,
// which reads them, and the model gateway, which must never forward them to
// a provider, agree on what they are. It imports only the standard library.
package authheader

import (
	"net/http"
	"strings"
)

// Token is the header that carries auth_token when Authorization carries a
// model provider's key.
const Token = "X-Mcproxy-Token"

// Cookie is the cookie the dashboard once kept auth_token in. Nothing
// accepts it now: a cookie is not bound to a port, so the browser sent it to
// every service on the same host (issue 26). A browser may still hold it;
// Strip keeps it from providers and the dashboard expires it.
const Cookie = "mcproxy_token"

// Bearer returns the token of an "Authorization: Bearer <token>" value (the
// scheme in any case, spaces around the token ignored).
func Bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Strip removes mcproxy's credentials from h, in place: the Token header,
// every Authorization value whose bearer token is authToken (none when
// authToken is empty: Authorization is then the provider's), and the Cookie
// pair from every Cookie header, the client's other cookies kept byte for
// byte.
func Strip(h http.Header, authToken string) {
	h.Del(Token)
	if authToken != "" {
		keep(h, "Authorization", func(v string) string {
			if t, ok := Bearer(v); ok && t == authToken {
				return ""
			}
			return v
		})
	}
	keep(h, "Cookie", withoutCookie)
}

// keep replaces each value of h[name] by edit's result, dropping empty
// ones and the header once none is left.
func keep(h http.Header, name string, edit func(string) string) {
	vs, ok := h[name]
	if !ok {
		return
	}
	var out []string
	for _, v := range vs {
		if v = edit(v); v != "" {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		delete(h, name)
		return
	}
	h[name] = out
}

// withoutCookie is a Cookie header value without its Cookie pairs; the
// other pairs and the separators between them stay as they came.
func withoutCookie(v string) string {
	parts := strings.Split(v, ";")
	kept := parts[:0:0]
	for _, p := range parts {
		if name, _, _ := strings.Cut(p, "="); strings.TrimSpace(name) != Cookie {
			kept = append(kept, p)
		}
	}
	if len(kept) == len(parts) {
		return v
	}
	return strings.TrimLeft(strings.Join(kept, ";"), " \t")
}
