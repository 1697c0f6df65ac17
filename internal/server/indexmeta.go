package server

import (
	"strings"

	"github.com/mcproxy/mcproxy/internal/config"
)

// withTitle adds what the upstream says about t beyond config.Tool to its
// index document m: the tool's display title (Tool.title, else
// annotations.title), ahead of the description, when the description does
// not already hold it. The index ingests the richest text the upstream
// sends whatever arm renders the answers (issue 17); the arm decides only
// what the model reads. readOnlyHint and destructiveHint are not indexed:
// neither frozen corpus carries them, so their effect on ranking cannot be
// measured yet.
func (s *Server) withTitle(t config.Tool, m config.ToolMetadata) config.ToolMetadata {
	mt, ok := s.up.MCPTool(t.Server, t.Name)
	if !ok {
		return m
	}
	title := strings.TrimSpace(mt.Title)
	if title == "" {
		title = strings.TrimSpace(mt.Annotations.Title)
	}
	if title == "" || title == t.Name || strings.Contains(m.Description, title) {
		return m
	}
	if m.Description == "" {
		m.Description = title
	} else {
		m.Description = title + ". " + m.Description
	}
	return m
}
