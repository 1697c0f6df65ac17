package upstream

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
)

// ToolFromMCP converts an upstream tool into the proxy's plain form
// (catalog.PlainTool). Schema is the tool's inputSchema exactly as the
// upstream sent it when t came from this package (RawInputSchema);
// otherwise it is t.InputSchema encoded, or nil when t has no schema.
func ToolFromMCP(server string, t mcp.Tool) config.Tool { return catalog.PlainTool(server, t) }
