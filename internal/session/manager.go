package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Manager owns the hosts of a running proxy, one per session id. Hosts are
// opened on first use (an id seen before is restored from disk) and kept
// until Release or Close. Sessions share nothing but the options: each has
// its own directory, lock, refs, blocks and archives.
type Manager struct {
	opts Options

	mu     sync.Mutex
	hosts  map[string]*Host
	closed bool
}

// NewManager returns a manager creating hosts with opts.
func NewManager(opts Options) *Manager {
	return &Manager{opts: opts, hosts: map[string]*Host{}}
}

// Host returns the host of session id, opening (or creating) it on first
// use.
func (m *Manager) Host(id string) (*Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if h, ok := m.hosts[id]; ok {
		return h, nil
	}
	h, err := Open(m.opts, id)
	if err != nil {
		return nil, err
	}
	m.hosts[id] = h
	return h, nil
}

// Release closes the host of session id (when the client's session ends).
// Its files stay; a later Host(id) restores it.
func (m *Manager) Release(id string) error {
	m.mu.Lock()
	h, ok := m.hosts[id]
	delete(m.hosts, id)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return h.Close()
}

// Close closes every host.
func (m *Manager) Close() error {
	m.mu.Lock()
	hosts := m.hosts
	m.hosts = map[string]*Host{}
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, h := range hosts {
		errs = append(errs, h.Close())
	}
	return errors.Join(errs...)
}

// Instructions is noa's resident prompt, for the instructions field of the
// MCP initialize result.
func Instructions() string { return noa.BuildSystemPrompt(noa.Sections{}) }

// CompressTool is the Compress tool definition: noa's name, description and
// schema.
func CompressTool() mcp.Tool {
	schema, _ := json.Marshal(noa.CompressToolSchema())
	return mcp.NewToolWithRawSchema(noa.CompressToolName, noa.CompressToolDescription, schema)
}

// ReadArchiveTool is the read_archive tool definition.
func ReadArchiveTool() mcp.Tool {
	schema, _ := json.Marshal(ReadArchiveSchema())
	t := mcp.NewToolWithRawSchema(ReadArchiveToolName, ReadArchiveDescription, schema)
	t.Annotations.ReadOnlyHint = mcp.ToBoolPtr(true)
	return t
}

// SessionIDFunc tells which session a request belongs to.
type SessionIDFunc func(ctx context.Context) string

// ClientSessionID is the SessionIDFunc for mcp-go: the id of the
// ClientSession in ctx, with stdio (whose id is the constant "stdio") mapped
// to stdioID so each run of the proxy gets its own session.
func ClientSessionID(stdioID string) SessionIDFunc {
	return func(ctx context.Context) string {
		s := mcpserver.ClientSessionFromContext(ctx)
		if s == nil {
			return ""
		}
		if id := s.SessionID(); id != "stdio" {
			return id
		}
		return stdioID
	}
}

// RawArguments is a call's arguments as JSON.
func RawArguments(req mcp.CallToolRequest) json.RawMessage {
	switch v := req.Params.Arguments.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return v
	case []byte:
		return v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		return b
	}
}

// RecordedToolName is the name a call is recorded under: for call_tool the
// routed tool id it names ("server:tool"), so protected-tool patterns and
// noa's tool lists see the real tool; otherwise the tool called.
func RecordedToolName(req mcp.CallToolRequest) string {
	if req.Params.Name == "call_tool" {
		if name, ok := req.GetArguments()["name"].(string); ok && name != "" {
			return name
		}
	}
	return req.Params.Name
}

// Middleware records and shapes every tools/call through the session's host.
// Compress and read_archive are left to their own handlers (which record
// themselves). A request with no session id, or whose host cannot be opened,
// passes through untouched.
func (m *Manager) Middleware(idOf SessionIDFunc) mcpserver.ToolHandlerMiddleware {
	return func(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Name == noa.CompressToolName || req.Params.Name == ReadArchiveToolName {
				return next(ctx, req)
			}
			h := m.hostFor(ctx, idOf)
			if h == nil {
				return next(ctx, req)
			}
			return h.Call(ctx, RecordedToolName(req), RawArguments(req), func(ctx context.Context) (*mcp.CallToolResult, error) {
				return next(ctx, req)
			})
		}
	}
}

func (m *Manager) hostFor(ctx context.Context, idOf SessionIDFunc) *Host {
	id := idOf(ctx)
	if id == "" {
		return nil
	}
	h, err := m.Host(id)
	if err != nil {
		m.opts.withDefaults().Logger.Error("opening the session host; the call passes through unrecorded", zap.String("session_id", id), zap.Error(err))
		return nil
	}
	return h
}

// CompressHandler handles the Compress tool.
func (m *Manager) CompressHandler(idOf SessionIDFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h := m.hostFor(ctx, idOf)
		if h == nil {
			return mcp.NewToolResultError("Compress is unavailable: this connection has no session. Nothing was changed."), nil
		}
		res, err := h.HandleCompress(ctx, RawArguments(req))
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("Compress could not be recorded (%v), so nothing was compressed and no state changed. This is a storage problem on the host, not a mistake in your call.", err)), nil
		}
		return res, nil
	}
}

// ReadArchiveHandler handles read_archive; the call and its page are
// recorded like any other tool call.
func (m *Manager) ReadArchiveHandler(idOf SessionIDFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h := m.hostFor(ctx, idOf)
		if h == nil {
			return mcp.NewToolResultError("read_archive is unavailable: this connection has no session."), nil
		}
		raw := RawArguments(req)
		return h.Call(ctx, ReadArchiveToolName, raw, func(ctx context.Context) (*mcp.CallToolResult, error) {
			a, err := ParseReadArchiveArgs(raw)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return h.ReadArchive(ctx, a), nil
		})
	}
}
