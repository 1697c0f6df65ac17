package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/authheader"
)

func (g *Gateway) newProvider(a api, base, prefix string) (*provider, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gateway: %s base_url is not an http(s) URL", a)
	}
	p := &provider{api: a, base: u, prefix: prefix}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, prefix)
			pr.Out.URL.RawPath = strings.TrimPrefix(pr.In.URL.RawPath, prefix)
			pr.SetURL(p.base)
			g.cleanHeader(pr.Out.Header)
		},
		Transport: g.transport,
		// Streams (SSE) reach the client event by event.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			g.upstreamFailed(w, r, p, err)
		},
	}
	return p, nil
}

// target is the upstream URL for path (below the provider's prefix).
func (p *provider) target(path, rawQuery string) string {
	u := *p.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = rawQuery
	return u.String()
}

// hopHeaders are connection-level headers, never forwarded: those of
// httputil.ReverseProxy, which keeps its list and the function using it
// unexported. The passthrough paths leave this to their ReverseProxy; the
// gateway sends model requests itself (it rewrites the body and reads the
// answer), so those need the same list.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// removeHopHeaders removes from h what httputil.ReverseProxy does: the
// headers its Connection header names, then hopHeaders (RFC 9110 §7.6.1).
func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for name := range strings.SplitSeq(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// cleanHeader removes from h what is mcproxy's and not the provider's: the
// session header and mcproxy's credentials (authheader.Strip: the token
// header, an Authorization carrying auth_token, the dashboard's old cookie).
// Everything else the client sent stays as it came.
func (g *Gateway) cleanHeader(h http.Header) {
	h.Del(HeaderSession)
	authheader.Strip(h, g.authToken)
}

// outboundHeader is the header of a request the gateway sends itself: the
// client's, without hop-by-hop headers (and those Connection names), the
// gateway's own, and Accept-Encoding, so the transport negotiates
// compression and hands back a body the gateway can read.
func (g *Gateway) outboundHeader(in http.Header) http.Header {
	h := in.Clone()
	removeHopHeaders(h)
	h.Del("Accept-Encoding")
	h.Del("Content-Length")
	h.Del("Host")
	g.cleanHeader(h)
	if _, ok := h["User-Agent"]; !ok {
		h.Set("User-Agent", "") // not Go's default: the provider sees only what the client sent
	}
	return h
}

// send makes one upstream request with body in place of the client's.
func (g *Gateway) send(ctx context.Context, r *http.Request, p *provider, path string, body []byte) (*http.Response, error) {
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, p.target(path, r.URL.RawQuery), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the upstream request: %w", err)
	}
	out.Header = g.outboundHeader(r.Header)
	out.ContentLength = int64(len(body))
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// copyResponse writes resp to the client as it comes, flushing after every
// read so a stream reaches the client event by event. It reports an error
// when the body could not be read or written to the end.
func copyResponse(w http.ResponseWriter, resp *http.Response) error {
	h := copyHeader(w, resp)
	if resp.Uncompressed {
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return fmt.Errorf("writing to the client: %w", werr)
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the upstream answer: %w", err)
		}
	}
}

// copyHeader copies resp's header to w's, hop-by-hop headers left out
// (those its Connection names too, as ReverseProxy does), and returns w's
// header.
func copyHeader(w http.ResponseWriter, resp *http.Response) http.Header {
	in := resp.Header.Clone()
	removeHopHeaders(in)
	h := w.Header()
	for k, vs := range in {
		h[k] = vs
	}
	return h
}

// upstreamFailed answers a request whose upstream could not be reached (or
// whose client went away first) with a provider-style 502.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, p *provider, err error) {
	if r.Context().Err() != nil {
		g.log.Debug("client went away before the upstream answered", zap.String("path", r.URL.Path))
		return
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its URL may carry credentials of the base URL
	}
	g.log.Warn("upstream API unreachable", zap.String("api", string(p.api)), zap.String("host", p.base.Host), zap.Error(err))
	writeError(w, p.api, http.StatusBadGateway, "api_error",
		fmt.Sprintf("mcproxy gateway: the %s API at %s could not be reached: %v", p.api, p.base.Host, err))
}

// writeError answers with the provider's error shape.
func writeError(w http.ResponseWriter, a api, status int, typ, msg string) {
	writeErrorCode(w, a, status, typ, "", msg)
}

// writeErrorCode is writeError with the OpenAI shape's code ("" = null;
// Anthropic's shape has none).
func writeErrorCode(w http.ResponseWriter, a api, status int, typ, code, msg string) {
	var body any
	if a == openaiAPI {
		if typ == "api_error" {
			typ = "server_error"
		}
		var c any
		if code != "" {
			c = code
		}
		body = map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Refuse answers a request refused before the gateway runs it (a client
// token that is unknown, expired or not allowed the gateway:
// clientauth.GatewayHandler) in the error shape of the provider r's path
// is for, so that the provider's SDK raises its typed error (Anthropic's
// AuthenticationError, OpenAI's PermissionDeniedError, ...) with msg as
// mcproxy wrote it. Headers already set on w (WWW-Authenticate,
// Retry-After) stay.
func (g *Gateway) Refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	a := anthropicAPI
	if p, _ := g.route(r.URL.Path); p != nil {
		a = p.api
	}
	typ, code := "invalid_request_error", ""
	switch status {
	case http.StatusUnauthorized:
		typ, code = "authentication_error", "invalid_api_key"
	case http.StatusForbidden:
		typ, code = "permission_error", "permission_denied"
	case http.StatusTooManyRequests:
		typ, code = "rate_limit_error", "rate_limit_exceeded"
	}
	if a == openaiAPI && status != http.StatusTooManyRequests {
		// OpenAI answers a bad key with this type; its SDK picks the
		// error class by status.
		typ = "invalid_request_error"
	}
	writeErrorCode(w, a, status, typ, code, msg)
}
