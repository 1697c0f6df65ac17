package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// ToolFromMCP converts an upstream tool into the proxy's plain form. Schema
// is the tool's inputSchema exactly as the upstream sent it when t came from
// this package (RawInputSchema); otherwise it is t.InputSchema encoded, or
// nil when t has no schema.
func ToolFromMCP(server string, t mcp.Tool) config.Tool {
	var schema json.RawMessage
	if len(t.RawInputSchema) > 0 {
		schema = bytes.Clone(t.RawInputSchema)
	} else if t.InputSchema.Type != "" {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			schema = b
		}
	}
	return config.Tool{
		ID:          config.ToolID(server, t.Name),
		Server:      server,
		Name:        t.Name,
		Description: t.Description,
		Schema:      schema,
	}
}
