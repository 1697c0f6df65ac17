package server

import (
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// The front's side of internal/passthrough: the upstream manager's
// callbacks for what is not a tool go to the passthrough, and the front
// tells clients of its own tool changes through the passthrough's log relay.

// CatalogChanged records a server's new prompts, resources and templates
// (nil when it went down): passthrough.Passthrough.CatalogChanged. It
// matches the upstream manager's OnCatalogChanged callback.
func (s *Server) CatalogChanged(server string, c *upstream.Catalog) {
	s.pass.CatalogChanged(server, c)
}

// ResourceUpdated relays an upstream's notifications/resources/updated to
// the client sessions subscribed to uri: passthrough.Passthrough.ResourceUpdated.
// It matches the upstream manager's OnResourceUpdated callback.
func (s *Server) ResourceUpdated(server, uri string) {
	s.pass.ResourceUpdated(server, uri)
}

// ServerLog relays an upstream's log message that no call can be credited
// with to every client session, each at its own level:
// passthrough.Passthrough.ServerLog. It matches upstream.Options.OnLog.
func (s *Server) ServerLog(server string, n mcp.LoggingMessageNotification) {
	s.pass.ServerLog(server, n)
}

// announce tells every client session, as a log message of mcproxy's own
// (logger "mcproxy", at each session's level), that an upstream's tools
// changed or that it went down: a client that set a log level sees why
// tools came or went.
func (s *Server) announce(server string, tools int) {
	n := mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "mcproxy",
		fmt.Sprintf("upstream %q is ready with %d tools", server, tools))
	if tools == 0 {
		n = mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, "mcproxy",
			fmt.Sprintf("upstream %q is down or has no tools; its tools are gone until it is back", server))
	}
	s.ServerLog("mcproxy", n)
}
