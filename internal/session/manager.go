package session

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// Manager owns the hosts of a running proxy, one per session id. Hosts are
// opened on first use (an id seen before is restored from disk) and kept
// until Release or Close. Sessions share nothing but the options: each has
// its own directory, lock, refs, blocks and archives. Opening a session
// that has a long transcript to replay holds up only that session.
type Manager struct {
	opts Options

	mu     sync.Mutex
	hosts  map[string]*entry
	closed bool
}

// entry is one session's host, opened once.
type entry struct {
	ready chan struct{} // closed once h and err are set
	h     *Host
	err   error
}

// NewManager returns a manager creating hosts with opts.
func NewManager(opts Options) *Manager {
	return &Manager{opts: opts, hosts: map[string]*entry{}}
}

// Host returns the host of session id, opening (or creating) it on first
// use. Concurrent first uses of one id open it once.
func (m *Manager) Host(id string) (*Host, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	e, ok := m.hosts[id]
	if !ok {
		e = &entry{ready: make(chan struct{})}
		m.hosts[id] = e
	}
	m.mu.Unlock()
	if ok {
		<-e.ready
		return e.h, e.err
	}
	e.h, e.err = Open(m.opts, id)
	m.mu.Lock()
	switch {
	case e.err != nil:
		delete(m.hosts, id) // a later call may try again
	case m.closed:
		// Close ran while this session was opening; it must not leak.
		e.h.Close()
		e.h, e.err = nil, ErrClosed
	}
	m.mu.Unlock()
	close(e.ready)
	return e.h, e.err
}

// Release closes the host of session id (when the client's session ends).
// Its files stay; a later Host(id) restores it.
func (m *Manager) Release(id string) error {
	m.mu.Lock()
	e, ok := m.hosts[id]
	delete(m.hosts, id)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	<-e.ready
	if e.h == nil {
		return nil
	}
	return e.h.Close()
}

// Close closes every host; later calls to Host fail with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	entries := m.hosts
	m.hosts = map[string]*entry{}
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, e := range entries {
		<-e.ready
		if e.h != nil {
			errs = append(errs, e.h.Close())
		}
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

// ClientSessionID is the SessionIDFunc for mcp-go: SessionIDFor the
// ClientSession in ctx.
func ClientSessionID(stdioID string) SessionIDFunc {
	return func(ctx context.Context) string {
		return SessionIDFor(mcpserver.ClientSessionFromContext(ctx), stdioID)
	}
}

// SessionIDFor is the session id a host is keyed on for an mcp-go client
// session: its own id (the Mcp-Session-Id of streamable HTTP, the
// connection's id for SSE), except that stdio, whose id is the constant
// "stdio", maps to stdioID (see NewSessionID) so each run of the proxy gets
// its own session. "" (no session: nil, or a request of the 2026-07-28
// protocol, which has none) means the call passes through unrecorded.
func SessionIDFor(cs mcpserver.ClientSession, stdioID string) string {
	if cs == nil {
		return ""
	}
	if id := cs.SessionID(); id != "stdio" {
		return id
	}
	return stdioID
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
// passes through untouched. Calls are recorded under RecordedToolName.
func (m *Manager) Middleware(idOf SessionIDFunc) mcpserver.ToolHandlerMiddleware {
	return m.MiddlewareNamed(idOf, RecordedToolName)
}

// MiddlewareNamed is Middleware recording each call under nameOf(req): a
// front that exposes upstream tools under other names (direct mode's
// server__tool) records the routed "server:tool", so protected_tools and
// noa's tool lists see one name whatever the mode.
func (m *Manager) MiddlewareNamed(idOf SessionIDFunc, nameOf func(mcp.CallToolRequest) string) mcpserver.ToolHandlerMiddleware {
	return func(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.Name == noa.CompressToolName || req.Params.Name == ReadArchiveToolName {
				return next(ctx, req)
			}
			h := m.hostFor(ctx, idOf)
			if h == nil {
				return next(ctx, req)
			}
			return h.Call(ctx, nameOf(req), RawArguments(req), func(ctx context.Context) (*mcp.CallToolResult, error) {
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

// NewSessionID returns a fresh session id for a connection that has none of
// its own (stdio, whose mcp-go session id is the constant "stdio"): the UTC
// start time, so `sessions list` sorts and reads naturally, and 8 random hex
// digits, so two proxies started in the same second do not share a session.
func NewSessionID(now time.Time) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on supported platforms; fall back to
		// the clock's nanoseconds rather than to a shared id.
		binary.BigEndian.PutUint32(b[:], uint32(now.UnixNano()))
	}
	return "stdio-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
