package mcptransport

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// setLevelRemoved is the answer to logging/setLevel on 2026-07-28, which
// removed it (SEP-2575): it says where the level goes instead.
const setLevelRemoved = "logging/setLevel was removed in protocol version " + mcp.ProtocolVersion20260728 +
	", which this request's " + mcp.HeaderProtocolVersion + " header names: put the level in each request's _meta as \"" +
	mcp.MetaKeyLogLevel + "\" instead (a request without it gets no log messages)"

// removedSetLevel answers a streamable HTTP logging/setLevel whose
// MCP-Protocol-Version header names 2026-07-28 or later with Method not
// found (-32601, HTTP 404), as that revision asks of a server, saying where
// the level goes instead. The Go SDK's client (v1.8.0) sends it on
// 2026-07-28 without the _meta every request of that revision carries, and
// mcp-go refused it with a 400 about the missing _meta, which tells the
// client nothing it can act on (issue 29). Everything else goes to next.
func removedSetLevel(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			next.ServeHTTP(w, r)
			return
		}
		data, ok := postedBody(w, r, next)
		if !ok {
			return
		}
		// Only a body that names the method is decoded.
		if !bytes.Contains(data, []byte(mcp.MethodSetLogLevel)) {
			next.ServeHTTP(w, r)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.Method != string(mcp.MethodSetLogLevel) || !hasID(msg.ID) {
			next.ServeHTTP(w, r)
			return
		}
		writeJSON(w, http.StatusNotFound, rpcError(msg.ID, mcp.METHOD_NOT_FOUND, setLevelRemoved))
	})
}
