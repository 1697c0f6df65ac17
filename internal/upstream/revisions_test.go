package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// readRevisions returns the records in the revisions file at path.
func readRevisions(t *testing.T, path string) map[string]revision {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the revisions file: %v", err)
	}
	var f revisionsFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("the revisions file is not JSON: %v\n%s", err, data)
	}
	if f.Version != revisionsFileVersion {
		t.Fatalf("revisions file version %d, want %d", f.Version, revisionsFileVersion)
	}
	return f.Servers
}

// writeRevisions writes a revisions file holding recs.
func writeRevisions(t *testing.T, path string, recs map[string]revision) {
	t.Helper()
	data, err := json.Marshal(revisionsFile{Version: revisionsFileVersion, Servers: recs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runOnce starts a Manager for servers, checks that server comes up, and
// closes it again; it returns the revision server was spoken to in.
func runOnce(t *testing.T, servers map[string]config.ServerConfig, server, revisionsPath string) string {
	t.Helper()
	log, logs := observed()
	m := startManager(t, servers, Options{Logger: log, Revisions: revisionsPath})
	if st := statusOf(t, m, server); st.State != StateReady {
		t.Fatalf("got %+v, want ready", st)
	}
	closeAndCheck(t, m)
	return protocolOf(logs, server)
}

// methodCounter is a streamable-HTTP mcp-go server that counts the
// requests it gets by method.
type methodCounter struct {
	url string
	mu  sync.Mutex
	n   map[string]int
}

// newMethodCounter starts one. With refuseInitialize it speaks only
// 2026-07-28: it answers initialize as mcp-go's server answers a request
// in a revision it does not serve (HTTP 400, UnsupportedProtocolVersion).
func newMethodCounter(t *testing.T, refuseInitialize bool, opts ...server.StreamableHTTPOption) *methodCounter {
	s := server.NewMCPServer("counted", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo: " + req.GetString("text", "")), nil
	})
	h := server.NewStreamableHTTPServer(s, opts...)
	c := &methodCounter{n: map[string]int{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				ID     any    `json:"id"`
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				c.mu.Lock()
				c.n[msg.Method]++
				c.mu.Unlock()
			}
			if refuseInitialize && msg.Method == string(mcp.MethodInitialize) {
				refusal := mcp.UnsupportedProtocolVersionError{Version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, Supported: []string{mcp.LATEST_PROTOCOL_VERSION}}.JSONRPCError()
				refusal.ID = mcp.NewRequestId(msg.ID)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(refusal)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c.url = ts.URL + "/mcp"
	return c
}

func (c *methodCounter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

// TestRevisionRemembered: a server that ignores server/discover is probed
// on the first run only; a second Manager over the same revisions file
// greets it with initialize at once, and a change to its launch config
// probes again.
func TestRevisionRemembered(t *testing.T) {
	sc, dir := peerServer(t, "deaf")
	sc.InitTimeout = config.Duration(2 * time.Second) // probe bounded to 500ms
	path := filepath.Join(t.TempDir(), RevisionsFile)
	servers := map[string]config.ServerConfig{"deaf": sc}

	if got := runOnce(t, servers, "deaf", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("first run spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := discovers(t, dir); n != 1 {
		t.Fatalf("first run: %d server/discover, want 1", n)
	}
	want := revision{Config: configKey(sc), Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION, Probe: probeIgnored}
	if got := readRevisions(t, path)["deaf"]; got != want {
		t.Errorf("record after the first run: got %+v, want %+v", got, want)
	}

	if got := runOnce(t, servers, "deaf", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("second run spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := discovers(t, dir); n != 1 {
		t.Errorf("after the second run: %d server/discover in all, want 1: the remembered revision must skip the probe", n)
	}

	changed := sc
	changed.Env = map[string]string{peerModeEnv: "deaf", peerDirEnv: dir, "REVISION_TEST": "changed"}
	if got := runOnce(t, map[string]config.ServerConfig{"deaf": changed}, "deaf", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("third run spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := discovers(t, dir); n != 2 {
		t.Errorf("after a run with a changed env: %d server/discover in all, want 2: a changed config must probe again", n)
	}
	if got := readRevisions(t, path)["deaf"].Config; got != configKey(changed) {
		t.Errorf("record's config key %q, want the changed config's %q", got, configKey(changed))
	}
}

// TestRevisionRememberedDual: a streamable-HTTP server that speaks both
// revisions (spoken to in 2025-11-25, settleLegacy) gets no
// server/discover at all on the next run.
func TestRevisionRememberedDual(t *testing.T) {
	up := newMethodCounter(t, false)
	path := filepath.Join(t.TempDir(), RevisionsFile)
	servers := map[string]config.ServerConfig{"dual": {URL: up.url}}
	if got := runOnce(t, servers, "dual", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("first run spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	first := up.count(string(mcp.MethodServerDiscover))
	if first == 0 {
		t.Fatal("first run sent no server/discover")
	}
	if got := readRevisions(t, path)["dual"]; got.Protocol != mcp.LATEST_LEGACY_PROTOCOL_VERSION || got.Probe != probeAnswered {
		t.Errorf("record: got %+v, want %s with probe %q", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION, probeAnswered)
	}
	if got := runOnce(t, servers, "dual", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("second run spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := up.count(string(mcp.MethodServerDiscover)); n != first {
		t.Errorf("the second run sent %d server/discover, want 0", n-first)
	}
}

// TestRevisionStaleModern: a record claiming 2026-07-28 for a server that
// speaks only 2025-11-25 (one that refuses server/discover, one that
// ignores it) does not keep it from connecting, and is corrected.
func TestRevisionStaleModern(t *testing.T) {
	deaf, _ := peerServer(t, "deaf")
	deaf.InitTimeout = config.Duration(2 * time.Second)
	legacyOnly := newMethodCounter(t, false, server.WithStreamableHTTPProtocolVersions(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	for name, tc := range map[string]struct {
		sc    config.ServerConfig
		probe string
	}{
		"ignores": {deaf, probeIgnored},
		"refuses": {config.ServerConfig{URL: legacyOnly.url}, probeRefused},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), RevisionsFile)
			writeRevisions(t, path, map[string]revision{"s": {Config: configKey(tc.sc), Protocol: mcp.LATEST_PROTOCOL_VERSION, Probe: probeAnswered}})
			if got := runOnce(t, map[string]config.ServerConfig{"s": tc.sc}, "s", path); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
				t.Errorf("spoke %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			}
			want := revision{Config: configKey(tc.sc), Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION, Probe: tc.probe}
			if got := readRevisions(t, path)["s"]; got != want {
				t.Errorf("record: got %+v, want %+v", got, want)
			}
		})
	}
}

// TestRevisionStaleLegacy: a record claiming 2025-11-25 for a server that
// now speaks only 2026-07-28 (it refuses initialize) is dropped within the
// same attempt: the server is negotiated with, connects in 2026-07-28,
// and the record is corrected. Over stdio and streamable HTTP, where the
// refusal reaches mcproxy differently (a JSON-RPC error; an HTTP 400).
func TestRevisionStaleLegacy(t *testing.T) {
	up := newMethodCounter(t, true, server.WithStreamableHTTPProtocolVersions(mcp.LATEST_PROTOCOL_VERSION))
	stdio, dir := peerServer(t, "modern")
	for name, tc := range map[string]struct {
		sc    config.ServerConfig
		inits func() int
	}{
		"http": {config.ServerConfig{URL: up.url}, func() int { return up.count(string(mcp.MethodInitialize)) }},
		"stdio": {stdio, func() int {
			m, _ := filepath.Glob(filepath.Join(dir, "initialize-*"))
			return len(m)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), RevisionsFile)
			writeRevisions(t, path, map[string]revision{"s": {Config: configKey(tc.sc), Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION, Probe: probeIgnored}})
			log, logs := observed()
			m := startManager(t, map[string]config.ServerConfig{"s": tc.sc}, Options{Logger: log, Revisions: path, MinBackoff: time.Hour, MaxBackoff: time.Hour})
			if st := statusOf(t, m, "s"); st.State != StateReady {
				t.Fatalf("got %+v, want ready on the first attempt", st)
			}
			if got := protocolOf(logs, "s"); got != mcp.LATEST_PROTOCOL_VERSION {
				t.Errorf("spoke %q, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
			}
			if n := tc.inits(); n != 1 {
				t.Errorf("%d initialize sent, want 1 (the remembered revision's, refused)", n)
			}
			want := revision{Config: configKey(tc.sc), Protocol: mcp.LATEST_PROTOCOL_VERSION, Probe: probeAnswered}
			if got := readRevisions(t, path)["s"]; got != want {
				t.Errorf("record: got %+v, want %+v", got, want)
			}
			if got := text(call(t, m, "s", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
				t.Errorf("got %q, want echo: hi", got)
			}
		})
	}
}

// TestRevisionForgotten: an initialize that fails without an answer (the
// server timed out or died) on a server remembered as 2025-11-25 forgets
// the record, so the next attempt, and the next run, negotiate.
func TestRevisionForgotten(t *testing.T) {
	for _, mode := range []string{"hang", "crash"} {
		t.Run(mode, func(t *testing.T) {
			sc, _ := peerServer(t, mode)
			sc.InitTimeout = config.Duration(500 * time.Millisecond)
			path := filepath.Join(t.TempDir(), RevisionsFile)
			writeRevisions(t, path, map[string]revision{"s": {Config: configKey(sc), Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION}})
			m := startManager(t, map[string]config.ServerConfig{"s": sc}, Options{Revisions: path, MinBackoff: time.Hour, MaxBackoff: time.Hour})
			if st := statusOf(t, m, "s"); st.State != StateDown {
				t.Fatalf("got %+v, want down", st)
			}
			if m.links["s"].legacy.Load() {
				t.Error("the next attempt would still skip the probe")
			}
			if rec, ok := readRevisions(t, path)["s"]; ok {
				t.Errorf("record %+v kept after a failed initialize", rec)
			}
		})
	}
}

// TestRevisionFileUnreadable: a revisions file that is not JSON is
// reported and replaced; a pinned server is not recorded (it is never
// probed), and a server no longer configured loses its record.
func TestRevisionFileUnreadable(t *testing.T) {
	up := newMethodCounter(t, false)
	path := filepath.Join(t.TempDir(), RevisionsFile)
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	log, logs := observed()
	servers := map[string]config.ServerConfig{
		"free":   {URL: up.url},
		"pinned": {URL: up.url, Protocol: mcp.LATEST_PROTOCOL_VERSION},
	}
	m := startManager(t, servers, Options{Logger: log, Revisions: path})
	for _, name := range []string{"free", "pinned"} {
		if st := statusOf(t, m, name); st.State != StateReady {
			t.Fatalf("%s: got %+v, want ready", name, st)
		}
	}
	closeAndCheck(t, m)
	if logs.FilterMessageSnippet("remembered protocol revisions cannot be read").Len() != 1 {
		t.Error("no warning about the unreadable file")
	}
	recs := readRevisions(t, path)
	if _, ok := recs["pinned"]; ok || recs["free"].Protocol != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("records: got %+v, want free's (%s) only", recs, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}

	recs["gone"] = revision{Config: "x", Protocol: mcp.LATEST_LEGACY_PROTOCOL_VERSION}
	writeRevisions(t, path, recs)
	other := newMethodCounter(t, false)
	runOnce(t, map[string]config.ServerConfig{"free": {URL: up.url}, "other": {URL: other.url}}, "other", path)
	if _, ok := readRevisions(t, path)["gone"]; ok {
		t.Error("the record of a server no longer configured was kept")
	}
}

// runModernOnly serves the peer as a server that speaks only 2026-07-28:
// its server/discover lists that revision alone, and it refuses
// initialize with UnsupportedProtocolVersion (noting each refusal in
// dir/initialize-PID-N).
func runModernOnly() int {
	dir := os.Getenv(peerDirEnv)
	n := 0
	ctx := server.WithSupportedProtocolVersions(context.Background(), []string{mcp.LATEST_PROTOCOL_VERSION})
	return serveFiltered(ctx, dir, func(line []byte) ([]byte, bool) {
		var msg struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.Method != string(mcp.MethodInitialize) {
			return nil, false
		}
		n++
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("initialize-%d-%d", os.Getpid(), n)), line, 0o644)
		refusal := mcp.UnsupportedProtocolVersionError{Version: mcp.LATEST_LEGACY_PROTOCOL_VERSION, Supported: []string{mcp.LATEST_PROTOCOL_VERSION}}.JSONRPCError()
		refusal.ID = mcp.NewRequestId(msg.ID)
		answer, _ := json.Marshal(refusal)
		return answer, true
	})
}

// TestStatelessDualServerModern: a server speaking both revisions over
// streamable HTTP without sessions (mcp-go's stateless mode, like the Go
// SDK's) cannot send server-to-client requests on 2025-11-25, so it is
// spoken to in 2026-07-28 (issue 29); the next run remembers that and
// greets it with server/discover alone. The same server with sessions
// keeps 2025-11-25.
func TestStatelessDualServerModern(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), RevisionsFile)
	up := newMethodCounter(t, false, server.WithStateLess(true))
	servers := map[string]config.ServerConfig{"s": {URL: up.url}}
	if got := runOnce(t, servers, "s", path); got != mcp.LATEST_PROTOCOL_VERSION {
		t.Fatalf("first run spoke %q, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
	}
	if got := readRevisions(t, path)["s"].Protocol; got != mcp.LATEST_PROTOCOL_VERSION {
		t.Errorf("remembered %q, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
	}
	inits := up.count(string(mcp.MethodInitialize))
	if got := runOnce(t, servers, "s", path); got != mcp.LATEST_PROTOCOL_VERSION {
		t.Errorf("second run spoke %q, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
	}
	if n := up.count(string(mcp.MethodInitialize)); n != inits {
		t.Errorf("the second run sent %d initialize, want none", n-inits)
	}

	stateful := newMethodCounter(t, false)
	if got := runOnce(t, map[string]config.ServerConfig{"f": {URL: stateful.url}}, "f", filepath.Join(t.TempDir(), RevisionsFile)); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("the stateful server was spoken to in %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
}
