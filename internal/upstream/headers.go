package upstream

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
)

// SEP-2243 lets a tool mark input parameters with x-mcp-header so that, on
// 2026-07-28 over Streamable HTTP, a client mirrors their values into
// Mcp-Param-{Name} headers that gateways can route on. mcproxy sends
// tools/call through mcp-go's client, which mirrors them only for tools
// it listed itself; mcproxy lists them (listTools), so it adds the
// headers (paramHeaders). A definition whose annotations break the
// SEP's rules (an empty or non-token name, a duplicate, an annotation on
// an object, array or null) is refused alone (validToolHeaders): the
// spec says a client must exclude such a tool, and mcproxy's own front
// could not serve it either.

// validToolHeaders reports why t's x-mcp-header annotations are invalid
// (nil = they are valid, or there are none).
func validToolHeaders(t *mcp.Tool) error {
	if err := mcp.ValidateParamHeaderAnnotations(t); err != nil {
		return fmt.Errorf("its x-mcp-header annotations break SEP-2243: %w", err)
	}
	return nil
}

// withoutInvalidHeaders drops the tools whose x-mcp-header annotations
// are invalid, logging each with the reason, and keeps the rest.
func withoutInvalidHeaders(tools []mcp.Tool, log *zap.Logger) []mcp.Tool {
	out := tools[:0:0]
	for i := range tools {
		if err := validToolHeaders(&tools[i]); err != nil {
			log.Warn("refusing an upstream tool; its server's other tools are served (fix the tool's inputSchema upstream)",
				zap.String("tool", tools[i].Name), zap.Error(err))
			continue
		}
		out = append(out, tools[i])
	}
	return out
}

// paramHeaders is the Mcp-Param-* headers of a call of tool with params
// (nil when the connection does not carry them: before 2026-07-28, or not
// over Streamable HTTP, or the tool marks no parameter).
func (s *session) paramHeaders(tool *mcp.Tool, params mcp.CallToolParams) http.Header {
	if !s.modern.Load() || s.http == nil || tool == nil {
		return nil
	}
	raw, err := json.Marshal(struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}{params.Name, params.Arguments})
	if err != nil {
		return nil
	}
	found := mcp.GenerateParamHeaders(tool, raw)
	if len(found) == 0 {
		return nil
	}
	h := make(http.Header, len(found))
	for k, v := range found {
		h.Set(k, v)
	}
	return h
}
