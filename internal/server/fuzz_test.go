package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// FuzzHTTPFront throws arbitrary requests at the whole HTTP front (Guard,
// the body limits, batches, the session registry, mcp-go's transports and
// the meta tools, with noa recording): JSON-RPC bodies, batches, methods,
// paths and the headers that steer them. Whatever comes in, the front must
// not panic or fail with a server error, must answer JSON that parses when
// it says it is JSON, and must never serve a session id it did not issue.
//
//	go test -run '^$' -fuzz FuzzHTTPFront -fuzztime 20s ./internal/server
func FuzzHTTPFront(f *testing.F) {
	seeds := []struct {
		method, path, session, version, contentType, body string
	}{
		{"POST", mcptransport.PathStreamable, "", "", "application/json", initBody},
		{"POST", mcptransport.PathStreamable, "made-up", "2025-03-26", "application/json", echoCall},
		{"POST", mcptransport.PathStreamable, "", "2025-03-26", "application/json", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", `[]`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", `[1,2,3`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", `{"jsonrpc":"2.0","id":1e999,"method":"tools/list"}`},
		{"POST", mcptransport.PathStreamable, "", "2026-07-28", "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":"x"}}}}`},
		{"POST", mcptransport.PathStreamable, "", "", "text/plain", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"GET", mcptransport.PathStreamable, "mcp-00000000000000000000000000000000", "", "", ""},
		{"DELETE", mcptransport.PathStreamable, "mcp-00000000000000000000000000000000", "", "", ""},
		{"POST", mcptransport.PathMessage + "?sessionId=nope", "", "", "application/json", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", `[` + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 12) + `{}]`},
		{"POST", mcptransport.PathStreamable, "", "", "application/json", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\"}"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.session, s.version, s.contentType, []byte(s.body))
	}

	dir := f.TempDir()
	issued := map[string]bool{}
	m := session.NewManager(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
	f.Cleanup(func() { m.Close() })
	up := newTestUpstreams(f, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex(), Sessions: m}, Options{})
	if err != nil {
		f.Fatal(err)
	}
	s.Resync()
	h, closeSessions := transportOf(s, mcptransport.Options{}).Handler(mcptransport.HTTPOptions{SessionIdleTimeout: time.Hour, Limits: mcptransport.Limits{MaxBatch: 10, MaxRequestBytes: 1 << 16}})
	f.Cleanup(func() { closeSessions(f.Context()) })

	f.Fuzz(func(t *testing.T, method, path, sessionID, version, contentType string, body []byte) {
		if u, err := url.ParseRequestURI(path); err != nil || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#") || u.Host != "" {
			return // not a request line net/http would deliver
		}
		for _, v := range []string{sessionID, version, contentType} {
			if !validHeaderValue(v) {
				return
			}
		}
		switch method {
		case "GET", "POST", "DELETE", "PUT", "OPTIONS":
		default:
			return
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Host = "127.0.0.1:8765"
		req.Header.Set("Accept", "application/json, text/event-stream")
		setIf(req.Header, "Mcp-Session-Id", sessionID)
		setIf(req.Header, "Mcp-Protocol-Version", version)
		setIf(req.Header, "Content-Type", contentType)
		if method == "GET" {
			// A listening stream lasts until its context ends; one made
			// here must not, so GET gets a context already over.
			ctx, cancel := context.WithCancel(req.Context())
			cancel()
			req = req.WithContext(ctx)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		// Every initialize opens a session that lives for the idle timeout,
		// so the fuzzer reaches limits.max_sessions within seconds: past it
		// the designed answer is 503 with a JSON-RPC error naming the key
		// (TestMaxSessions), which is a refusal, not a fault.
		atCap := rec.Code == http.StatusServiceUnavailable && json.Valid(rec.Body.Bytes()) &&
			strings.Contains(rec.Body.String(), "(limits.max_sessions)")
		if rec.Code >= 500 && !atCap {
			t.Fatalf("%s %s: server error %d: %s", method, path, rec.Code, rec.Body.String())
		}
		out := bytes.TrimSpace(rec.Body.Bytes())
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && len(out) > 0 && !json.Valid(out) {
			t.Fatalf("%s %s: Content-Type JSON but the body is not: %q", method, path, out)
		}
		// Only an issued session ever reaches the disk.
		if id := rec.Header().Get("Mcp-Session-Id"); id != "" {
			issued[id] = true
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !issued[e.Name()] {
				t.Fatalf("%s %s with session %q: a session directory %q exists that mcproxy never issued", method, path, sessionID, e.Name())
			}
		}
	})
}

// setIf sets header k to v unless v is empty.
func setIf(h http.Header, k, v string) {
	if v != "" {
		h.Set(k, v)
	}
}

// validHeaderValue reports whether v can be sent as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
