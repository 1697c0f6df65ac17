package config

import (
	"encoding/json"
	"strings"
)

// ToolMetadata is the exact text the search index ingests for one tool. The
// upstream layer builds it from a live tools/list; an encoding arm may rewrite
// ParamsJSON (and, for some arms, Description) to what it renders, so the index
// sees precisely what the agent will read.
type ToolMetadata struct {
	// Name is the tool's name as its upstream reports it.
	Name string `json:"name"`
	// ServerName is the configured name of the upstream server.
	ServerName string `json:"server"`
	// Description is the tool's description, verbatim unless an arm rewrites it.
	Description string `json:"description"`
	// ParamsJSON is the parameter text: the input schema's JSON by default,
	// empty when the tool has no schema.
	ParamsJSON string `json:"params,omitempty"`
}

// ID is the tool's proxy-wide identifier, "server:tool".
func (m ToolMetadata) ID() string { return ToolID(m.ServerName, m.Name) }

// Tool is one tool definition as captured from an upstream or a frozen corpus:
// identity, description and the raw input schema. It is the unit the encoding
// arms and the profiler work on.
type Tool struct {
	// ID is "server:tool".
	ID string `json:"tool_id"`
	// Server is the configured server name.
	Server string `json:"server"`
	// Name is the tool name as the upstream reports it.
	Name string `json:"tool"`
	// Description is the tool description, verbatim.
	Description string `json:"description"`
	// Schema is the tool's JSON input schema; nil or empty when it has none.
	Schema json.RawMessage `json:"schema,omitempty"`
}

// ToolID joins a server name and a tool name into the "server:tool" id that
// call_tool and the index use. Server names never contain ':' (Validate
// rejects them), so the first ':' always separates the two parts.
func ToolID(server, tool string) string { return server + ":" + tool }

// SplitToolID splits "server:tool" at the first ':'. ok is false when id has
// no ':' or either side is empty.
func SplitToolID(id string) (server, tool string, ok bool) {
	server, tool, found := strings.Cut(id, ":")
	if !found || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}
