package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/metrics"
)

// MaxRequestBytes bounds one model request's body (Anthropic's own limit is
// 32 MB); a larger one gets 413 naming the limit.
const MaxRequestBytes = 64 << 20

// modelRequest serves POST /v1/messages and <prefix>/v1/chat/completions.
func (g *Gateway) modelRequest(w http.ResponseWriter, r *http.Request, p *provider) {
	body, ok := g.readBody(w, r, p)
	if !ok {
		return
	}
	path := r.URL.Path[len(p.prefix):]
	if g.hosts == nil {
		g.metrics.GatewayRequest(string(p.api), metrics.Gateway{})
		g.forward(w, r, p, path, body)
		return
	}
	g.project(w, r, p, path, body)
}

// readBody reads a model request's body, at most MaxRequestBytes. When it
// reports false the client has been answered with the provider's error.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, p *provider) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, p.api, http.StatusRequestEntityTooLarge, "request_too_large",
				fmt.Sprintf("mcproxy gateway: the request body exceeds %d bytes (MaxRequestBytes); send fewer or smaller attachments", tooBig.Limit))
			return nil, false
		}
		writeError(w, p.api, http.StatusBadRequest, "invalid_request_error", "mcproxy gateway: reading the request body: "+err.Error())
		return nil, false
	}
	return body, true
}

// forward sends body upstream in place of the client's and copies the
// answer back as it comes. The upstream request ends when the client's
// does.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, p *provider, path string, body []byte) {
	resp, err := g.send(r.Context(), r, p, path, body)
	if err != nil {
		g.upstreamFailed(w, r, p, err)
		return
	}
	defer resp.Body.Close()
	if err := copyResponse(w, resp); err != nil {
		g.log.Debug("answer cut short", zap.String("api", string(p.api)), zap.Error(err))
	}
}
