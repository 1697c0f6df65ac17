package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/config"
)

// statelessServer is a scripted 2026-07-28 Streamable HTTP server: it
// refuses the first request with UnsupportedProtocolVersion while listing
// 2026-07-28 (as the conformance suite's request-metadata scenario does),
// lists tools, and records each POST's method, headers and _meta.
type statelessServer struct {
	tools []map[string]any
	mu    sync.Mutex
	posts []recordedPost
}

type recordedPost struct {
	method string
	header http.Header
	meta   map[string]any
}

func (s *statelessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	first := len(s.posts) == 0
	s.posts = append(s.posts, recordedPost{req.Method, r.Header.Clone(), req.Params.Meta})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	answer := func(status int, msg map[string]any) {
		msg["jsonrpc"], msg["id"] = "2.0", req.ID
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(msg)
	}
	if req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if first {
		answer(http.StatusBadRequest, map[string]any{"error": map[string]any{"code": mcp.UNSUPPORTED_PROTOCOL_VERSION,
			"message": "Unsupported protocol version", "data": map[string]any{"supported": []string{"2026-07-28"}, "requested": "2026-07-28"}}})
		return
	}
	result := map[string]any{"resultType": "complete"}
	switch req.Method {
	case "server/discover":
		result["supportedVersions"] = []string{"2026-07-28"}
		result["capabilities"] = map[string]any{"tools": map[string]any{}}
		result["_meta"] = map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "scripted", "version": "1"}}
	case "tools/list":
		result["tools"] = s.tools
	case "tools/call":
		result["content"] = []any{map[string]any{"type": "text", "text": "done"}}
	default:
		answer(http.StatusNotFound, map[string]any{"error": map[string]any{"code": mcp.METHOD_NOT_FOUND, "message": "no " + req.Method}})
		return
	}
	answer(http.StatusOK, map[string]any{"result": result})
}

func (s *statelessServer) recorded() []recordedPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.posts)
}

// headerTool is a tool whose input properties carry the x-mcp-header
// annotations given (property name → header name, or a full schema).
func headerTool(name string, props map[string]any) map[string]any {
	return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object", "properties": props}}
}

// TestStatelessClientHeaders runs mcproxy's client side against a
// 2026-07-28 server that refuses the first server/discover: mcproxy asks
// again instead of falling back to initialize, every request carries the
// MCP-Protocol-Version header and _meta; a tool with invalid x-mcp-header
// annotations is refused alone, logged with the reason; a call of a tool
// with valid ones carries its Mcp-Param-* headers (SEP-2243).
func TestStatelessClientHeaders(t *testing.T) {
	t.Parallel()
	up := &statelessServer{tools: []map[string]any{
		headerTool("valid_tool", map[string]any{
			"region":   map[string]any{"type": "string", "x-mcp-header": "Region"},
			"priority": map[string]any{"type": "integer", "x-mcp-header": "Priority"},
			"label":    map[string]any{"type": "string", "x-mcp-header": "Label"},
			"plain":    map[string]any{"type": "string"},
		}),
		headerTool("invalid_array_header", map[string]any{
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "x-mcp-header": "Items"},
		}),
		headerTool("invalid_duplicate", map[string]any{
			"a": map[string]any{"type": "string", "x-mcp-header": "Same"},
			"b": map[string]any{"type": "string", "x-mcp-header": "same"},
		}),
		headerTool("no_headers", map[string]any{"q": map[string]any{"type": "string"}}),
	}}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	log, logs := observed()
	m := startManager(t, map[string]config.ServerConfig{"s": {URL: srv.URL}}, Options{Logger: log})
	if st := statusOf(t, m, "s"); st.State != StateReady {
		t.Fatalf("got %+v, want ready", st)
	}
	if got := protocolOf(logs, "s"); got != "2026-07-28" {
		t.Errorf("spoken in %q, want 2026-07-28", got)
	}
	var names []string
	for _, tool := range m.Tools() {
		names = append(names, tool.Name)
	}
	if want := []string{"no_headers", "valid_tool"}; !slices.Equal(names, want) {
		t.Errorf("tools: got %q, want %q (each invalid tool refused alone)", names, want)
	}
	refused := map[string]string{}
	for _, e := range logs.FilterMessageSnippet("refusing an upstream tool").All() {
		refused[e.ContextMap()["tool"].(string)] = e.ContextMap()["error"].(string)
	}
	for _, name := range []string{"invalid_array_header", "invalid_duplicate"} {
		if !strings.Contains(refused[name], "x-mcp-header") {
			t.Errorf("refusal of %s logged as %q, want the x-mcp-header reason", name, refused[name])
		}
	}

	if got := text(call(t, m, "s", "valid_tool", map[string]any{"region": "us-west1", "priority": 42, "label": "Hello, 世界", "plain": "x"})); got != "done" {
		t.Errorf("valid_tool answered %q, want done", got)
	}
	if got := text(call(t, m, "s", "no_headers", map[string]any{"q": "x"})); got != "done" {
		t.Errorf("no_headers answered %q, want done", got)
	}
	var calls []recordedPost
	for i, p := range up.recorded() {
		if p.method == "initialize" {
			t.Errorf("request %d is an initialize: a server that refused server/discover in 2026-07-28 while listing it must be asked again", i)
		}
		if v := p.header.Get("MCP-Protocol-Version"); v != "2026-07-28" {
			t.Errorf("request %d (%s): MCP-Protocol-Version %q, want 2026-07-28", i, p.method, v)
		}
		if p.meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" || p.meta["io.modelcontextprotocol/clientCapabilities"] == nil {
			t.Errorf("request %d (%s): _meta %v lacks the protocol version or client capabilities", i, p.method, p.meta)
		}
		if p.method == "tools/call" {
			calls = append(calls, p)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("got %d tools/call, want 2", len(calls))
	}
	for name, want := range map[string]string{
		"Mcp-Param-Region":   "us-west1",
		"Mcp-Param-Priority": "42",
		"Mcp-Param-Label":    "=?base64?SGVsbG8sIOS4lueVjA==?=",
	} {
		if got := calls[0].header.Get(name); got != want {
			t.Errorf("valid_tool call: %s %q, want %q", name, got, want)
		}
	}
	for _, c := range calls {
		for k := range c.header {
			if strings.HasPrefix(k, "Mcp-Param-") && c.header.Get("Mcp-Name") == "no_headers" {
				t.Errorf("no_headers call carries %s", k)
			}
		}
	}
}
