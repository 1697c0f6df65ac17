package mcptransport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRemovedSetLevel(t *testing.T) {
	t.Parallel()
	const setLevel = `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`
	for _, tc := range []struct {
		name, version, body string
		refused             bool
	}{
		{"2026-07-28 setLevel", "2026-07-28", setLevel, true},
		{"2025-11-25 setLevel", "2025-11-25", setLevel, false},
		{"no header", "", setLevel, false},
		{"2026-07-28 other method", "2026-07-28", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"logging/setLevel"}}`, false},
		{"2026-07-28 notification", "2026-07-28", `{"jsonrpc":"2.0","method":"logging/setLevel"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			passed := false
			h := removedSetLevel(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			if tc.version != "" {
				req.Header.Set("MCP-Protocol-Version", tc.version)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if passed == tc.refused {
				t.Fatalf("passed on: got %v, want %v", passed, !tc.refused)
			}
			if !tc.refused {
				return
			}
			body := rec.Body.String()
			if rec.Code != http.StatusNotFound || !strings.Contains(body, `"code":-32601`) || !strings.Contains(body, `"id":7`) ||
				!strings.Contains(body, `io.modelcontextprotocol/logLevel`) {
				t.Errorf("got %d %s, want 404 with Method not found (-32601) for id 7, naming the _meta key", rec.Code, body)
			}
		})
	}
}
