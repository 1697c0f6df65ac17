package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// A tools/call with large arguments (a write_file's content) is sent by
// mcproxy itself on 2025-11-25, not by mcp-go's client. mcp-go's
// CallToolParams is a json.Marshaler, so encoding/json compacts its output
// once more after encoding it: for a 5 MB argument that second pass was
// about 20-30 ms of the 45 ms the request took to encode, on the path of
// every such call (issue 13: a 5 MB write_file through mcproxy against the
// direct call). bigCallParams is a plain struct, encoded once. Everything
// else about the call is what the client does on that revision: the
// progress token in _meta, a notifications/cancelled when the caller gives
// up (the HTTP tap sends it for HTTP upstreams, sendCancelled here for
// stdio), the result decoded as mcp-go decodes it. On 2026-07-28 the client
// keeps the call (per-request _meta, input_required rounds).

// bigArgs is the size of a call's arguments (its strings' bytes) from
// which the call is sent by callBig.
const bigArgs = 64 << 10

// bigCallParams is a tools/call's params, with no MarshalJSON of its own.
type bigCallParams struct {
	Name      string    `json:"name"`
	Arguments any       `json:"arguments"`
	Meta      *mcp.Meta `json:"_meta,omitempty"`
}

type argumentsJSONKey struct{}

// WithArgumentsJSON returns ctx carrying raw, the JSON text of the
// arguments a Call made under it is given, as the client sent them: a
// large call sends these bytes instead of encoding the arguments again
// (issue 28). raw must be a JSON object that decodes to those arguments.
func WithArgumentsJSON(ctx context.Context, raw json.RawMessage) context.Context {
	return context.WithValue(ctx, argumentsJSONKey{}, raw)
}

// argumentsJSON is what WithArgumentsJSON put in ctx (nil: nothing).
func argumentsJSON(ctx context.Context) json.RawMessage {
	raw, _ := ctx.Value(argumentsJSONKey{}).(json.RawMessage)
	return raw
}

// callTool sends req to the upstream: through mcp-go's client, or, for
// large arguments on 2025-11-25, through callBig.
func (s *session) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s.modern.Load() || s.tr == nil || textSize(req.Params.Arguments, bigArgs) < bigArgs {
		return s.client.CallTool(ctx, req)
	}
	return s.callBig(ctx, req)
}

// callBig sends a tools/call mcproxy encodes itself (see above); its
// errors are the client's: a transport error, or the upstream's JSON-RPC
// error.
func (s *session) callBig(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id := fmt.Sprintf("mcproxy-%d", s.reqID.Add(1))
	params := bigCallParams{Name: req.Params.Name, Arguments: req.Params.Arguments, Meta: req.Params.Meta}
	if raw := argumentsJSON(ctx); len(raw) > 0 {
		// The client's bytes: encoding/json checks and compacts them in
		// one pass, where the map would be walked and every string
		// escaped again.
		params.Arguments = raw
	}
	resp, err := s.send(ctx, id, string(mcp.MethodToolsCall), params)
	if err != nil {
		if _, overHTTP := s.tr.(*httpTap); !overHTTP && ctx.Err() != nil {
			s.sendCancelled(mcp.NewRequestId(id), context.Cause(ctx))
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error.AsError()
	}
	return mcp.ParseCallToolResult(&resp.Result)
}

// textSize adds up the bytes of the strings in v (arguments as decoded
// from JSON), stopping once it reaches limit.
func textSize(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n >= limit {
			return
		}
		switch v := v.(type) {
		case string:
			n += len(v)
		case map[string]any:
			for k, e := range v {
				n += len(k)
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return n
}
