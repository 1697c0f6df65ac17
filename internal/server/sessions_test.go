package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// sessionFront serves a retrieve-mode front with noa on over HTTP, its
// sessions under a temporary directory, which it returns.
func sessionFront(t *testing.T, httpOpts mcptransport.HTTPOptions) (*front, string) {
	t.Helper()
	dir := t.TempDir()
	m := session.NewManager(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000), MaxResultTokens: 4000})
	t.Cleanup(func() { m.Close() })
	up := newTestUpstreams(t, map[string]*mcpserver.MCPServer{"test": newUpstreamServer()})
	s, err := New(Deps{Upstreams: up, Index: newWordIndex(), Sessions: m}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return serveFront(t, s, httpOpts), dir
}

const echoCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"test:echo","arguments":{"message":"hi"}}}}`

// initSession initializes a streamable HTTP session and returns its id.
func initSession(t *testing.T, f *front) string {
	t.Helper()
	code, body, h := postMCP(t, f.base+mcptransport.PathStreamable, "", initBody)
	id := h.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: got %d %q, session %q", code, body, id)
	}
	return id
}

// sessionDirs lists the session directories under dir.
func sessionDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// Only ids mcproxy issued are served: a made-up id, a well-formed one it
// never issued, or one issued and then deleted gets 404, and none of them
// creates anything on disk.
func TestSessionIDsMustBeIssued(t *testing.T) {
	f, dir := sessionFront(t, mcptransport.HTTPOptions{})
	for _, made := range []string{"made-up", "mcp-session-0b6c7a2e-5d8f-4c1e-9a3b-2f7d6e8c9a10", "mcp-00000000000000000000000000000000"} {
		code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, made, echoCall)
		if code != http.StatusNotFound {
			t.Errorf("id %q: got %d %q, want 404", made, code, body)
		}
	}
	if got := sessionDirs(t, dir); len(got) != 0 {
		t.Fatalf("made-up ids created session directories %v", got)
	}

	id := initSession(t, f)
	if !strings.HasPrefix(id, "mcp-") || len(id) != len("mcp-")+32 {
		t.Errorf("issued id %q: want mcp- and 32 hex digits (128 random bits)", id)
	}
	if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, echoCall); code != http.StatusOK || !strings.Contains(body, "Echo: hi") {
		t.Fatalf("call in an issued session: got %d %q", code, body)
	}
	if got := sessionDirs(t, dir); len(got) != 1 || got[0] != id {
		t.Fatalf("session directories %v, want just %s", got, id)
	}
	deleteSession(t, f, id)
	if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, echoCall); code != http.StatusNotFound {
		t.Errorf("id after DELETE: got %d %q, want 404", code, body)
	}
	// The deleted session's host is released: its lock is free again.
	h, err := session.Open(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000)}, id)
	if err != nil {
		t.Fatalf("after DELETE the session should be closed: %v", err)
	}
	h.Close()
}

func deleteSession(t *testing.T, f *front, id string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, f.base+mcptransport.PathStreamable, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: got %d", resp.StatusCode)
	}
}

// A session nobody uses for the idle timeout is ended as DELETE ends it:
// later requests get 404 and its files are closed. One in use is not.
func TestIdleSessionsEnd(t *testing.T) {
	f, dir := sessionFront(t, mcptransport.HTTPOptions{SessionIdleTimeout: 1500 * time.Millisecond})
	idle, busy := initSession(t, f), initSession(t, f)
	for _, id := range []string{idle, busy} {
		if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, id, echoCall); code != http.StatusOK {
			t.Fatalf("call: got %d %q", code, body)
		}
	}
	// busy calls every 300ms for 4s (the timeout plus the sweep's period
	// of 1s, twice over); idle is left alone.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, busy, echoCall); code != http.StatusOK {
			t.Fatalf("a session in use was ended: got %d %q", code, body)
		}
	}
	if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, idle, echoCall); code != http.StatusNotFound {
		t.Fatalf("the idle session: got %d %q, want 404", code, body)
	}
	h, err := session.Open(session.Options{Dir: dir, Noa: noa.DefaultConfig(20000)}, idle)
	if err != nil {
		t.Fatalf("the idle session's files should be released: %v", err)
	}
	h.Close()
	if _, err := os.Stat(filepath.Join(dir, idle, session.TranscriptFile)); err != nil {
		t.Errorf("the idle session's transcript should stay for the CLI: %v", err)
	}
}

// limits.max_sessions: an initialize past the cap gets 503 with a JSON-RPC
// error naming the key; sessions already open go on working, and once one
// ends a new one is admitted.
func TestMaxSessions(t *testing.T) {
	f, _ := sessionFront(t, mcptransport.HTTPOptions{Limits: mcptransport.Limits{MaxSessions: 2}})
	first, second := initSession(t, f), initSession(t, f)
	code, body, h := postMCP(t, f.base+mcptransport.PathStreamable, "", initBody)
	if code != http.StatusServiceUnavailable || h.Get("Mcp-Session-Id") != "" {
		t.Fatalf("third initialize: got %d, session %q; want 503 and no session", code, h.Get("Mcp-Session-Id"))
	}
	var resp struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("refusal %q is not a JSON-RPC response: %v", body, err)
	}
	for _, want := range []string{"2 are open", "limit is 2", "limits.max_sessions", "raise"} {
		if !strings.Contains(resp.Error.Message, want) {
			t.Errorf("refusal %q does not contain %q", resp.Error.Message, want)
		}
	}
	if resp.ID == nil || resp.Error.Code != mcptransport.ErrCodeTooManySessions {
		t.Errorf("refusal %s: want the initialize's id and code %d", body, mcptransport.ErrCodeTooManySessions)
	}
	if code, body, _ := postMCP(t, f.base+mcptransport.PathStreamable, second, echoCall); code != http.StatusOK || !strings.Contains(body, "Echo: hi") {
		t.Fatalf("an open session at the cap: got %d %q", code, body)
	}
	deleteSession(t, f, first)
	initSession(t, f)
}
