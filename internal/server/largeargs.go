package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// Large tool arguments are decoded once (issue 13). mcp-go's streamable
// HTTP front decodes a POSTed message six times before the tool handler
// runs (the message's id and method, its protocol era, its protocol
// information, its base message, the request, and the request's
// arguments); for a 5 MB write_file that was about 250 ms of CPU. So
// liftArguments, in front of it, takes a large tools/call's
// params.arguments out of the body (mcp-go sees {} in its place), decodes
// it once and keeps it in the request's context; restoreArguments, the
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

// liftMin is the smallest arguments object worth lifting: below it the
// decodes cost less than the walk.
const liftMin = 32 << 10

type liftedKey struct{}

// lifted is a tools/call's arguments taken out of the body.
type lifted struct {
	name string          // the tool called, as the body names it
	id   json.RawMessage // the request's id, as the body writes it
	args map[string]any
	raw  json.RawMessage
	used atomic.Bool // restored once, to the call it came with
}

// liftArguments hands next a POSTed tools/call whose params.arguments is
// an object of at least liftMin bytes with {} in its place, the object
// decoded into the request's context for restoreArguments. Any other
// request, and one whose body it cannot read plainly (escaped or repeated
// keys, arguments that do not decode), reaches next untouched, so mcp-go
// answers it as it always did.
func liftArguments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.ContentLength < liftMin {
			next.ServeHTTP(w, r)
			return
		}
		data, ok := postedBody(w, r, next)
		if !ok {
			return
		}
		l, start, end := liftable(data)
		if l == nil {
			next.ServeHTTP(w, r)
			return
		}
		body := make([]byte, 0, len(data)-(end-start)+2)
		body = append(append(append(body, data[:start]...), "{}"...), data[end:]...)
		r = r.WithContext(context.WithValue(r.Context(), liftedKey{}, l))
		r.Body = &bufferedBody{Reader: bytes.NewReader(body), data: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// liftable finds a tools/call's params.arguments in data and decodes it:
// nil when data is not a single tools/call message with one "method", one
// "params", one "name" and one "arguments" (an object of at least liftMin
// bytes), each key spelled plainly, or when the arguments do not decode
// (mcp-go then reports the body as it would).
func liftable(data []byte) (l *lifted, start, end int) {
	var method, params, id []byte
	nMethod, nParams, nID, nAnswer := 0, 0, 0, 0
	if !objectMembers(data, func(key []byte, s, e int) bool {
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
	if !objectMembers(params, func(key []byte, s, e int) bool {
		switch {
		case bytes.EqualFold(key, []byte("name")):
			name, nName = params[s:e], nName+1
		case bytes.EqualFold(key, []byte("arguments")):
			args, nArgs = params[s:e], nArgs+1
			start, end = base+s, base+e
		}
		return true
	}) || nName != 1 || nArgs != 1 || len(args) < liftMin || args[0] != '{' ||
		len(name) < 2 || name[0] != '"' || bytes.IndexByte(name, '\\') >= 0 {
		return nil, 0, 0
	}
	l = &lifted{name: string(name[1 : len(name)-1]), id: id, raw: args}
	if m, ok := plainObject(args); ok {
		l.args = m
	} else if json.Unmarshal(args, &l.args) != nil || l.args == nil {
		return nil, 0, 0
	}
	return l, start, end
}

// restoreArguments puts the arguments liftArguments took out of a call's
// body back into the request, before anything else reads them.
func restoreArguments(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if l, ok := ctx.Value(liftedKey{}).(*lifted); ok {
			l.restore(&req)
		}
		return next(ctx, req)
	}
}

// restore puts l's arguments into req, the call l was lifted from (whose
// arguments mcp-go decoded as {}), once; it reports whether it did.
func (l *lifted) restore(req *mcp.CallToolRequest) bool {
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
// (issue 28). The stdio reader (stdioBatches.split) lifts the arguments
// as liftArguments does, but a line has no request context to carry them
// in, so they wait in a liftTable under the request's id until mcp-go's
// BeforeCallTool hook, which it runs with the id before any middleware,
// puts them back (liftTable.restore). An entry whose request never reaches
// the hook (mcp-go refused it first) goes when its error response is
// written (liftTable.answered).

// liftTable holds the arguments lifted from stdio lines, by request id
// (idKey). Its zero value is ready.
type liftTable struct {
	mu   sync.Mutex
	byID map[string]*lifted
	// restored counts the calls that got their arguments back.
	restored atomic.Int64
}

// put keeps l under key; false (nothing kept) when a request with the
// same id is waiting already.
func (t *liftTable) put(key string, l *lifted) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.byID[key]; dup {
		return false
	}
	if t.byID == nil {
		t.byID = map[string]*lifted{}
	}
	t.byID[key] = l
	return true
}

// take removes and returns what is kept under key (nil: nothing).
func (t *liftTable) take(key string) *lifted {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.byID[key]
	delete(t.byID, key)
	return l
}

// empty reports whether nothing is kept.
func (t *liftTable) empty() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID) == 0
}

// restore is the BeforeCallTool hook: it puts back the arguments lifted
// from the stdio line of request id.
func (t *liftTable) restore(ctx context.Context, id any, req *mcp.CallToolRequest) {
	if t.empty() {
		return
	}
	if cs := mcpserver.ClientSessionFromContext(ctx); cs == nil || cs.SessionID() != stdioSessionID {
		return
	}
	key, err := json.Marshal(id)
	if err != nil {
		return
	}
	if l := t.take(string(key)); l != nil && l.restore(req) {
		t.restored.Add(1)
	}
}

// answered forgets the arguments of the request an error response line
// answers: they were restored already, unless mcp-go refused the request
// without running the call. A result answers a call that ran (or another
// request reusing the id, which must not take a waiting call's arguments).
func (t *liftTable) answered(line []byte) {
	var id []byte
	refused := false
	objectMembers(line, func(key []byte, s, e int) bool {
		switch string(key) {
		case "id":
			id = line[s:e]
		case "error":
			refused = true
			return false
		case "result":
			return false
		}
		return true
	})
	if refused && hasID(id) {
		t.take(idKey(id))
	}
}

// stdioSessionID is the session id mcp-go gives its stdio connection.
const stdioSessionID = "stdio"

// liftLine is the stdio line data (trimmed t) with its tools/call's large
// arguments lifted into lifts, or line itself when there is nothing to
// lift (or a request with its id is waiting).
func liftLine(lifts *liftTable, line, t []byte) []byte {
	if len(t) < liftMin {
		return line
	}
	l, start, end := liftable(t)
	if l == nil || !hasID(l.id) || !lifts.put(idKey(l.id), l) {
		return line
	}
	body := make([]byte, 0, len(t)-(end-start)+3)
	return append(append(append(append(body, t[:start]...), "{}"...), t[end:]...), '\n')
}
