package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// A stateless (2026-07-28) client's tools/call, prompts/get or
// resources/read that reaches a 2026-07-28 upstream is forwarded once, as
// the client sent it (issue 29): its _meta (capabilities, log level,
// client info), inputResponses and requestState go upstream, and the
// upstream's answer, an input_required result included, comes back as
// is. The client answers the upstream's input requests under the
// upstream's own keys, in as many rounds as the upstream needs, and the
// upstream checks the client's capabilities itself (SEP-2575's -32021
// for one it lacks). Nothing is left waiting between rounds. Where either
// side speaks 2025-11-25, the front bridges (passthrough's relay.go) and
// the request goes upstream the usual way.

// Forward is what a stateless client's request carries beyond its
// arguments, to be forwarded as sent (WithForward).
type Forward struct {
	// Meta is the client's _meta (nil: none). Its progressToken is not
	// forwarded: the upstream gets a token of mcproxy's own (relay.md).
	Meta *mcp.Meta
	// InputResponses and RequestState are the client's retry of a multi
	// round-trip request (empty on the first round).
	InputResponses mcp.InputResponses
	RequestState   string
}

type forwardKey struct{}

// WithForward returns ctx carrying f: a Call, GetPrompt or ReadResource
// made under it to a 2026-07-28 upstream is forwarded with f, once, and
// an input_required answer is returned, not answered by mcproxy.
func WithForward(ctx context.Context, f *Forward) context.Context {
	return context.WithValue(ctx, forwardKey{}, f)
}

func forwardFrom(ctx context.Context) *Forward {
	f, _ := ctx.Value(forwardKey{}).(*Forward)
	return f
}

// declare puts the client's _meta into meta, the _meta of the request
// going upstream: everything but its progress token and protocol version
// (the connection's), with mcproxy's client info where the client gave
// none. The capabilities are the client's alone, an empty object when it
// declared none (SEP-2575: a server must not infer any).
func (f *Forward) declare(meta map[string]any) {
	if f.Meta != nil {
		for k, v := range f.Meta.AdditionalFields {
			if k != mcp.MetaKeyProtocolVersion {
				meta[k] = v
			}
		}
	}
	if _, ok := meta[mcp.MetaKeyClientInfo]; !ok {
		meta[mcp.MetaKeyClientInfo] = clientInfo
	}
	if _, ok := meta[mcp.MetaKeyClientCapabilities]; !ok {
		meta[mcp.MetaKeyClientCapabilities] = map[string]any{}
	}
}

// forward sends one request for fwd's client and decodes the answer into
// out, an input_required result as much as a final one. A JSON-RPC error
// answer is an *RPCError, with the upstream's code.
func (s *session) forward(ctx context.Context, method string, params any, fwd *Forward, out any) error {
	return s.forwardWith(ctx, method, params, fwd, nil, out)
}

// forwardWith is forward with extra headers (a tool call's Mcp-Param-*).
func (s *session) forwardWith(ctx context.Context, method string, params any, fwd *Forward, extra http.Header, out any) error {
	p, err := withRound(params, mcp.MultiRoundTripParams{InputResponses: fwd.InputResponses, RequestState: fwd.RequestState})
	if err != nil {
		return err
	}
	id := fmt.Sprintf("mcproxy-%d", s.reqID.Add(1))
	resp, err := s.sendAs(ctx, id, method, p, fwd, extra)
	if err != nil {
		if _, overHTTP := s.tr.(*httpTap); !overHTTP && ctx.Err() != nil {
			// Over HTTP, ending the request's stream cancels it.
			s.sendCancelled(mcp.NewRequestId(id), context.Cause(ctx))
		}
		return err
	}
	if resp.Error != nil {
		return &RPCError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("decoding the answer to %s: %w", method, err)
	}
	return nil
}

// forwardCall is a tools/call forwarded for fwd's client (see forward);
// req is the call as Manager.Call built it (mcproxy's progress token, the
// tool's Mcp-Param-* headers).
func (s *session) forwardCall(ctx context.Context, req mcp.CallToolRequest, fwd *Forward) (*mcp.CallToolResult, error) {
	params := map[string]any{"name": req.Params.Name, "arguments": req.Params.Arguments}
	if raw := argumentsJSON(ctx); len(raw) > 0 {
		params["arguments"] = raw
	}
	if req.Params.Meta != nil {
		params["_meta"] = req.Params.Meta
	}
	var raw json.RawMessage
	if err := s.forwardWith(ctx, string(mcp.MethodToolsCall), params, fwd, req.Header, &raw); err != nil {
		return nil, err
	}
	return mcp.ParseCallToolResult(&raw)
}

// foreignState is the error of a retry whose requestState no 2026-07-28
// upstream can take: the call's server speaks 2025-11-25, so the state was
// not its own, and mcproxy's own states name calls it keeps (relay.go).
func foreignState(server, tool, state string) error {
	return fmt.Errorf("calling %s:%s: requestState %q names no call waiting for input (the call finished, or waited too long); send the call again without requestState and inputResponses", server, tool, state)
}
