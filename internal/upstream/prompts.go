package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Catalogs returns the catalog of every ready server, sorted by server
// name. The result is the caller's to keep.
func (m *Manager) Catalogs() []*Catalog {
	var out []*Catalog
	for _, name := range m.names {
		l := m.links[name]
		l.mu.Lock()
		if l.state == StateReady && l.catalog != nil {
			out = append(out, l.catalog.clone())
		}
		l.mu.Unlock()
	}
	return out
}

// GetPrompt runs prompts/get on one server. Errors are those of Call, with
// an upstream's JSON-RPC error answer as an *RPCError.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	params := map[string]any{"name": name}
	if len(args) > 0 {
		params["arguments"] = args
	}
	var raw json.RawMessage
	if err := m.request(ctx, server, string(mcp.MethodPromptsGet), params, &raw); err != nil {
		return nil, err
	}
	res, err := mcp.ParseGetPromptResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("decoding prompt %q of %q: %w", name, server, err)
	}
	return res, nil
}

// ReadResource runs resources/read on one server.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	var raw json.RawMessage
	if err := m.request(ctx, server, string(mcp.MethodResourcesRead), map[string]any{"uri": uri}, &raw); err != nil {
		return nil, err
	}
	res, err := mcp.ParseReadResourceResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("decoding resource %q of %q: %w", uri, server, err)
	}
	return res, nil
}

// Subscribe runs resources/subscribe on one server and remembers the
// subscription, so that a new connection to the server (after a restart)
// renews it.
func (m *Manager) Subscribe(ctx context.Context, server, uri string) error {
	if err := m.request(ctx, server, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri}, nil); err != nil {
		return err
	}
	l := m.links[server]
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[string]bool{}
	}
	l.subs[uri] = true
	l.mu.Unlock()
	return nil
}

// Unsubscribe forgets the subscription and runs resources/unsubscribe on
// the server when it is up (a server that is down has no subscription to
// end).
func (m *Manager) Unsubscribe(ctx context.Context, server, uri string) error {
	l, ok := m.links[server]
	if !ok {
		return fmt.Errorf("%w %q (configured: %s)", ErrUnknownServer, server, strings.Join(m.names, ", "))
	}
	l.mu.Lock()
	delete(l.subs, uri)
	ready := l.state == StateReady
	l.mu.Unlock()
	if !ready {
		return nil
	}
	return m.request(ctx, server, string(mcp.MethodResourcesUnsubscribe), map[string]any{"uri": uri}, nil)
}

// Complete runs completion/complete on one server.
func (m *Manager) Complete(ctx context.Context, server string, params mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res mcp.CompleteResult
	if err := m.request(ctx, server, string(mcp.MethodCompletionComplete), params, &res); err != nil {
		return nil, err
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res, nil
}

// request sends one request other than tools/call to a server, within its
// call timeout, and decodes the answer into out (nil = ignore it). The
// errors are Call's: ErrUnknownServer, *DownError, *TimeoutError,
// *CallError, and *RPCError for an upstream's JSON-RPC error answer.
func (m *Manager) request(ctx context.Context, server, method string, params, out any) error {
	l, ok := m.links[server]
	if !ok {
		return fmt.Errorf("%w %q (configured: %s)", ErrUnknownServer, server, strings.Join(m.names, ", "))
	}
	select {
	case <-m.started:
	default:
		return fmt.Errorf("%s on %q: the upstream manager has not been started", method, server)
	}
	if m.ctx.Err() != nil {
		return fmt.Errorf("%s on %q: the upstream manager is closed", method, server)
	}
	s, err := l.acquire(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, l.call.d, errCallTimeout)
	defer cancel()
	// It runs for its caller, under that session's roots (roots.go);
	// what the server asks meanwhile is not relayed, as outside any call.
	in, cctx, err := l.enter(cctx, s, true)
	if err == nil {
		defer s.calls.end(in)
		if err = s.rpc(cctx, method, params, out); err == nil {
			return nil
		}
	}
	var re *RPCError
	switch {
	case errors.As(err, &re):
		re.Server = server
		return re
	case ctx.Err() != nil:
		return fmt.Errorf("%s on %q: %w", method, server, ctx.Err())
	case cctx.Err() != nil && context.Cause(cctx) == errCallTimeout:
		return &TimeoutError{Server: server, Tool: method, Limit: l.call.d, Setting: l.call.setting}
	case isConnErr(err) && s.proc == nil:
		return l.httpCallFailed(s, method, err)
	case isConnErr(err):
		return l.lostDuringCall(s, method, err)
	default:
		return fmt.Errorf("%s on %q: %w", method, server, err)
	}
}
