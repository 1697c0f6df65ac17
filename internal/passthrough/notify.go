package passthrough

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// deliver sends one notification about the client request whose context
// is ctx: on that request's own HTTP stream where it has one
// (mcptransport.Notify: in the order sent, before the answer), else through
// mcp-go's session queue (queue), whose reader may be another stream, so
// the answer then waits for it (settle). It reports whether it queued; err
// is queue's.
func deliver(ctx context.Context, method string, params map[string]any, queue func() error) (queued bool, err error) {
	cs := mcpserver.ClientSessionFromContext(ctx)
	if cs == nil || !cs.Initialized() {
		return false, mcpserver.ErrNotificationNotInitialized
	}
	if mcptransport.Notify(ctx, method, params) {
		return false, nil
	}
	return true, queue()
}

// logWanted reports whether a log message at level may go to the client
// request of ctx, as mcp-go's SendLogMessageToClient decides: on
// 2026-07-28 at the level the request declared (none: no messages), before
// at the session's level (a session without logging: none).
func logWanted(ctx context.Context, level mcp.LoggingLevel) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != "" && level.ShouldSendTo(info.LogLevel)
	}
	s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithLogging)
	return ok && level.ShouldSendTo(s.GetLogLevel())
}

// logParams are a log message's notification params, as mcp-go builds them.
func logParams(n mcp.LoggingMessageNotification) map[string]any {
	return map[string]any{"level": n.Params.Level, "logger": n.Params.Logger, "data": n.Params.Data}
}

// sendLog delivers a log message to the client request of ctx at the
// level it asked for (logWanted). It reports whether it queued.
func sendLog(ctx context.Context, s *mcpserver.MCPServer, n mcp.LoggingMessageNotification) (bool, error) {
	if !logWanted(ctx, n.Params.Level) {
		return false, nil
	}
	return deliver(ctx, string(mcp.MethodNotificationMessage), logParams(n), func() error {
		return s.SendLogMessageToClient(ctx, n)
	})
}
