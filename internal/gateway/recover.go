package gateway

import (
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// trackingWriter remembers whether the answer has begun, so that a panic
// in a handler can still end it the way the client reads.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush through the wrapper.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// recoverPanic, deferred by ServeHTTP, turns a panic in a handler into
// what the client can read (a 500 before the answer began, an error event
// in a stream under way; a JSON answer already begun cannot be mended and
// its connection is cut) and logs it with its stack, instead of the
// connection dropping with no word.
func (g *Gateway) recoverPanic(w *trackingWriter, r *http.Request, a api) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v) // the reverse proxy's deliberate abort
	}
	g.log.Error("gateway handler panicked", zap.String("api", string(a)), zap.String("path", r.URL.Path),
		zap.String("panic", fmt.Sprint(v)), zap.Stack("stack"))
	const msg = "mcproxy gateway: internal error while serving this request (logged); send it again"
	switch {
	case !w.wrote:
		writeError(w, a, http.StatusInternalServerError, "api_error", msg)
	case strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream"):
		writeStreamError(&streamWriter{w: w, rc: http.NewResponseController(w)}, a, "api_error", msg)
	default:
		panic(http.ErrAbortHandler)
	}
}
