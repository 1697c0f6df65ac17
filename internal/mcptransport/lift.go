package mcptransport

import (
	"bytes"
	"net/http"

	"github.com/mcproxy/mcproxy/internal/jsonspan"
	"github.com/mcproxy/mcproxy/internal/largeargs"
)

// The transports' half of decoding large tool arguments once (package
// largeargs): each takes a large tools/call's arguments out of what mcp-go
// will read, and the MCP front's largeargs.Restore (HTTP) or
// largeargs.Table.Restore hook (stdio) puts them back.

// liftArguments hands next a POSTed tools/call whose params.arguments is
// an object of at least largeargs.Min bytes with {} in its place, the
// object decoded into the request's context for largeargs.Restore. Any
// other request, and one whose body it cannot read plainly (escaped or
// repeated keys, arguments that do not decode), reaches next untouched, so
// mcp-go answers it as it always did.
func liftArguments(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.ContentLength < largeargs.Min {
			next.ServeHTTP(w, r)
			return
		}
		data, ok := postedBody(w, r, next)
		if !ok {
			return
		}
		l, start, end := largeargs.Liftable(data)
		if l == nil {
			next.ServeHTTP(w, r)
			return
		}
		body := make([]byte, 0, len(data)-(end-start)+2)
		body = append(append(append(body, data[:start]...), "{}"...), data[end:]...)
		r = r.WithContext(largeargs.NewContext(r.Context(), l))
		r.Body = &bufferedBody{Reader: bytes.NewReader(body), data: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// answered forgets, from lifts, the arguments of the request an error
// response line answers: they were restored already, unless mcp-go refused
// the request without running the call. A result answers a call that ran
// (or another request reusing the id, which must not take a waiting call's
// arguments).
func answered(lifts *largeargs.Table, line []byte) {
	var id []byte
	refused := false
	jsonspan.ObjectMembers(line, func(key []byte, s, e int) bool {
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
		lifts.Take(idKey(id))
	}
}

// liftLine is the stdio line data (trimmed t) with its tools/call's large
// arguments lifted into lifts, or line itself when there is nothing to
// lift (or a request with its id is waiting).
func liftLine(lifts *largeargs.Table, line, t []byte) []byte {
	if len(t) < largeargs.Min {
		return line
	}
	l, start, end := largeargs.Liftable(t)
	if l == nil || !hasID(l.ID()) || !lifts.Put(idKey(l.ID()), l) {
		return line
	}
	body := make([]byte, 0, len(t)-(end-start)+3)
	return append(append(append(append(body, t[:start]...), "{}"...), t[end:]...), '\n')
}
