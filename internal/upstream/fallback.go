package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// fallbackStatuses are the answers to a streamable-HTTP initialize POST
// after which the MCP spec's backwards-compatibility advice has a client
// try the same URL as a legacy SSE server (2025-03-26 transports,
// "Backwards Compatibility").
var fallbackStatuses = []int{400, 404, 405}

// connect dials the upstream; a url server without an explicit transport
// that refuses the streamable-HTTP initialize with 400, 404 or 405 is dialed
// again as legacy SSE, and stays SSE for later reconnects. The log says
// which transport the server speaks.
func (l *link) connect(ctx context.Context) (*session, []mcp.Tool, error) {
	s, tools, err := l.dial(ctx)
	if err == nil {
		return s, tools, err
	}
	status := httpStatus(err)
	if errors.Is(err, transport.ErrLegacySSEServer) && s != nil {
		status = int(s.postStatus.Load())
		err = fmt.Errorf("%w (HTTP %d)", err, status)
	}
	if !l.mayFallBack() || !slices.Contains(fallbackStatuses, status) {
		if status != 0 && slices.Contains(fallbackStatuses, status) && l.kind == config.TransportStreamableHTTP {
			err = fmt.Errorf("%w; if this is a legacy SSE server, set mcpServers.%s.transport to \"sse\"", err, l.name)
		}
		return s, tools, err
	}
	l.closeSession(s)
	l.log.Info("the upstream refused the streamable-HTTP initialize; trying it as a legacy SSE server",
		zap.Int("status", status))
	l.setKind(config.TransportSSE)
	s2, tools, err2 := l.dial(ctx)
	if err2 != nil {
		l.setKind(config.TransportStreamableHTTP)
		return s2, nil, fmt.Errorf("%w; as legacy SSE: %v", err, err2)
	}
	l.log.Info("the upstream speaks legacy SSE (set transport: \"sse\" in its config to skip the streamable-HTTP attempt)")
	return s2, tools, nil
}

// mayFallBack reports whether l may switch to legacy SSE: a url server
// whose config names no transport, still on streamable HTTP.
func (l *link) mayFallBack() bool {
	return l.cfg.URL != "" && l.cfg.Transport == "" && l.cfg.Type == "" && l.kind == config.TransportStreamableHTTP
}

// setKind changes the transport l dials. Only the supervisor calls it;
// status reads kind under mu.
func (l *link) setKind(kind string) {
	l.mu.Lock()
	l.kind = kind
	l.mu.Unlock()
}

// statusTap records the status of every POST response, so that a refused
// initialize can be told apart by its status (mcp-go reports every 4xx the
// same way; a 401 must not send us to SSE).
type statusTap struct {
	base   http.RoundTripper
	status *atomic.Int32
}

func (t *statusTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		t.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}
