// Package largeargs decodes a large tools/call's arguments once (issues 13
// and 28): the transports (internal/transport) lift them out of the body or
// line before mcp-go reads it, and the MCP front (internal/server) puts them
// back before any tool handler sees the request. It owns the lifted
// arguments, the walk that finds them (Liftable), the plain decoder
// (plain.go), the table that holds stdio's until their call runs, and the
// middleware and hook that restore them. It does no I/O.
package largeargs

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/mcproxy/mcproxy/internal/jsonspan"
)

// Large tool arguments are decoded once (issue 13). mcp-go's streamable
// HTTP front decodes a POSTed message six times before the tool handler
// runs (the message's id and method, its protocol era, its protocol
// information, its base message, the request, and the request's
// arguments); for a 5 MB write_file that was about 250 ms of CPU. So
// the transport's liftArguments, in front of it, takes a large tools/call's
// params.arguments out of the body (mcp-go sees {} in its place), decodes
// it once and keeps it in the request's context (NewContext); Restore, the
// tool handler middleware closest to mcp-go, puts it back before any
// other middleware or handler sees the request. What the handlers get is
// what mcp-go would have decoded: Arguments as a map, RawArguments as the
// bytes sent.
//
// The upstream is sent the map, not the bytes: encoding/json compacts the
// output of every json.Marshaler, and mcp-go's CallToolParams is one, so
// raw arguments would be scanned twice on the way out (54 ms for a 5 MB
// write_file here, against 38 ms for the map). Decoding is what got
// cheaper instead (plainObject).

// Min is the smallest arguments object worth lifting: below it the
// decodes cost less than the walk.
const Min = 32 << 10

type liftedKey struct{}

// Lifted is a tools/call's arguments taken out of the body.
type Lifted struct {
	name string          // the tool called, as the body names it
	id   json.RawMessage // the request's id, as the body writes it
	args map[string]any
	raw  json.RawMessage
	used atomic.Bool // restored once, to the call it came with
}

// NewContext returns ctx carrying l, for Restore.
func NewContext(ctx context.Context, l *Lifted) context.Context {
	return context.WithValue(ctx, liftedKey{}, l)
}

// ID is the request's id as the body writes it (nil when it has none).
func (l *Lifted) ID() json.RawMessage { return l.id }

// Liftable finds a tools/call's params.arguments in data and decodes it:
// nil when data is not a single tools/call message with one "method", one
// "params", one "name" and one "arguments" (an object of at least Min
// bytes), each key spelled plainly, or when the arguments do not decode
// (mcp-go then reports the body as it would).
func Liftable(data []byte) (l *Lifted, start, end int) {
	var method, params, id []byte
	nMethod, nParams, nID, nAnswer := 0, 0, 0, 0
	if !jsonspan.ObjectMembers(data, func(key []byte, s, e int) bool {
		switch {
		case bytes.EqualFold(key, []byte("method")):
			method, nMethod = data[s:e], nMethod+1
		case bytes.EqualFold(key, []byte("params")):
			params, nParams = data[s:e], nParams+1
			start = s
		case bytes.EqualFold(key, []byte("id")):
			id, nID = data[s:e], nID+1
		case bytes.EqualFold(key, []byte("result")), bytes.EqualFold(key, []byte("error")):
			nAnswer++
		}
		return true
	}) || nMethod != 1 || nParams != 1 || nID > 1 || nAnswer > 0 || string(method) != `"`+string(mcp.MethodToolsCall)+`"` {
		return nil, 0, 0
	}
	base := start
	var name, args []byte
	nName, nArgs := 0, 0
	if !jsonspan.ObjectMembers(params, func(key []byte, s, e int) bool {
		switch {
		case bytes.EqualFold(key, []byte("name")):
			name, nName = params[s:e], nName+1
		case bytes.EqualFold(key, []byte("arguments")):
			args, nArgs = params[s:e], nArgs+1
			start, end = base+s, base+e
		}
		return true
	}) || nName != 1 || nArgs != 1 || len(args) < Min || args[0] != '{' ||
		len(name) < 2 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 {
		return nil, 0, 0
	}
	l = &Lifted{name: string(name[1 : len(name)-1]), id: id, raw: args}
	if m, ok := plainObject(args); ok {
		l.args = m
	} else if json.Unmarshal(args, &l.args) != nil || l.args == nil {
		return nil, 0, 0
	}
	return l, start, end
}

// Restore puts the arguments a transport lifted (NewContext) out of a call's
// body back into the request, before anything else reads them.
func Restore(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if l, ok := ctx.Value(liftedKey{}).(*Lifted); ok {
			l.restore(&req)
		}
		return next(ctx, req)
	}
}

// restore puts l's arguments into req, the call l was lifted from (whose
// arguments mcp-go decoded as {}), once; it reports whether it did.
func (l *Lifted) restore(req *mcp.CallToolRequest) bool {
	if l.name != req.Params.Name {
		return false
	}
	if m, empty := req.Params.Arguments.(map[string]any); empty && len(m) == 0 && l.used.CompareAndSwap(false, true) {
		req.Params.Arguments, req.Params.RawArguments = l.args, l.raw
		return true
	}
	return false
}

// On stdio mcp-go decodes each line about nine times before the tool
// handler runs (the stdio server checks it against three kinds of
// response and reads its method, then HandleMessage reads it as in
// HTTP): for a 5 MB write_file that was two thirds of the proxy's CPU
// (issue 28). The stdio reader (internal/transport) lifts the arguments
// as it does over HTTP, but a line has no request context to carry them
// in, so they wait in a Table under the request's id until mcp-go's
// BeforeCallTool hook, which it runs with the id before any middleware,
// puts them back (Table.Restore). An entry whose request never reaches
// the hook (mcp-go refused it first) is taken when the transport writes
// its error response.

// Table holds the arguments lifted from stdio lines, by request id
// (its canonical JSON form). Its zero value is ready.
type Table struct {
	mu   sync.Mutex
	byID map[string]*Lifted
	// restored counts the calls that got their arguments back.
	restored atomic.Int64
}

// Restored is how many calls got their lifted arguments back.
func (t *Table) Restored() int64 { return t.restored.Load() }

// Put keeps l under key; false (nothing kept) when a request with the
// same id is waiting already.
func (t *Table) Put(key string, l *Lifted) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.byID[key]; dup {
		return false
	}
	if t.byID == nil {
		t.byID = map[string]*Lifted{}
	}
	t.byID[key] = l
	return true
}

// Take removes and returns what is kept under key (nil: nothing).
func (t *Table) Take(key string) *Lifted {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byID[key]
	delete(t.byID, key)
	return l
}

// Empty reports whether nothing is kept.
func (t *Table) Empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID) == 0
}

// Restore is the BeforeCallTool hook: it puts back the arguments lifted
// from the stdio line of request id.
func (t *Table) Restore(ctx context.Context, id any, req *mcp.CallToolRequest) {
	if t.Empty() {
		return
	}
	if cs := mcpserver.ClientSessionFromContext(ctx); cs == nil || cs.SessionID() != StdioSessionID {
		return
	}
	key, err := json.Marshal(id)
	if err != nil {
		return
	}
	if l := t.Take(string(key)); l != nil && l.restore(req) {
		t.restored.Add(1)
	}
}

// StdioSessionID is the session id mcp-go gives its stdio connection.
const StdioSessionID = "stdio"
