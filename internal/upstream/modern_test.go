package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// discovers counts the server/discover requests a "deaf" peer dropped.
func discovers(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "discover-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestModernProbeIgnored: a stdio server that ignores server/discover
// (neither an answer nor MethodNotFound) costs its first start the probe,
// bounded by a quarter of init_timeout, and is then spoken to in
// 2025-11-25; reconnects skip the probe.
func TestModernProbeIgnored(t *testing.T) {
	sc, dir := peerServer(t, "deaf")
	sc.InitTimeout = config.Duration(2 * time.Second) // probe bounded to 500ms
	log, logs := observed()
	m := startManager(t, map[string]config.ServerConfig{"deaf": sc}, Options{Logger: log, MinBackoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if st := statusOf(t, m, "deaf"); st.State != StateReady {
		t.Fatalf("got %+v, want ready: the ignored probe must leave init_timeout room for initialize", st)
	}
	if got := protocolOf(logs, "deaf"); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("spoken in %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := discovers(t, dir); n != 1 {
		t.Fatalf("the server was sent %d server/discover, want 1", n)
	}
	if got := text(call(t, m, "deaf", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("got %q, want echo: hi", got)
	}

	pid := childPID(t, m, "deaf")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "a new child to be ready", func() bool {
		l := m.links["deaf"]
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.state == StateReady && l.sess != nil && l.sess.proc != nil && l.sess.proc.pid != pid
	})
	if n := discovers(t, dir); n != 1 {
		t.Errorf("the server was sent %d server/discover in all, want 1: a reconnect must not probe again", n)
	}
}

// TestModernPinRefused: "protocol": "2026-07-28" on a server that does not
// speak it is an error naming the key, not a silent fallback.
func TestModernPinRefused(t *testing.T) {
	sc, _ := peerServer(t, "deaf")
	sc.InitTimeout = config.Duration(2 * time.Second)
	sc.Protocol = mcp.LATEST_PROTOCOL_VERSION
	m := startManager(t, map[string]config.ServerConfig{"pinned": sc}, Options{})
	st := statusOf(t, m, "pinned")
	if st.State == StateReady || !strings.Contains(st.LastError, "mcpServers.pinned.protocol pins 2026-07-28") {
		t.Errorf("got %+v, want down with an error naming mcpServers.pinned.protocol", st)
	}
}

// TestDualStdioPeer: the mcp-go peer speaks both revisions, so unpinned
// it is spoken to in 2025-11-25, greeted again on the same child (one
// process, no restart).
func TestDualStdioPeer(t *testing.T) {
	sc, _ := peerServer(t, "peer")
	log, logs := observed()
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{Logger: log})
	if got := protocolOf(logs, "p"); got != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Fatalf("spoken in %q, want %s", got, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	if n := len(logs.FilterMessage("started upstream process").All()); n != 1 {
		t.Errorf("%d processes started, want 1", n)
	}
	if got := text(call(t, m, "p", "echo", map[string]any{"text": "hi"})); got != "echo: hi" {
		t.Errorf("got %q, want echo: hi", got)
	}
}

// TestModernStdioPeer: the mcp-go peer over stdio pinned to 2026-07-28:
// its paginated tools are listed with their schemas verbatim, calls work,
// a tool it adds arrives through mcproxy's subscriptions/listen stream,
// and a cancelled call cancels its handler (stdio keeps
// notifications/cancelled on 2026-07-28).
func TestModernStdioPeer(t *testing.T) {
	sc, dir := peerServer(t, "peer")
	sc.Protocol = mcp.LATEST_PROTOCOL_VERSION
	log, logs := observed()
	changed := make(chan []config.Tool, 10)
	m := startManager(t, map[string]config.ServerConfig{"p": sc}, Options{Logger: log,
		OnToolsChanged: func(_ string, tools []config.Tool) { changed <- tools }})
	if got := protocolOf(logs, "p"); got != mcp.LATEST_PROTOCOL_VERSION {
		t.Fatalf("spoken in %q, want %s", got, mcp.LATEST_PROTOCOL_VERSION)
	}
	if st := statusOf(t, m, "p"); st.Tools != len(peerToolNames) {
		t.Fatalf("got %d tools, want %d over three pages", st.Tools, len(peerToolNames))
	}
	raw, ok := m.MCPTool("p", "raw")
	if !ok || string(raw.RawInputSchema) != rawSchema {
		t.Errorf("raw's schema: got %s, want it verbatim", raw.RawInputSchema)
	}
	<-changed // from connecting
	if got := text(call(t, m, "p", "add_tool", map[string]any{"name": "late"})); got != "added late" {
		t.Fatalf("add_tool: got %q", got)
	}
	select {
	case tools := <-changed:
		if !strings.Contains(strings.Join(toolNames(tools), ","), "p:late") {
			t.Errorf("after list_changed: got %v, want p:late among them", toolNames(tools))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools change within 10s of the server adding a tool")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, "p", "sleep", map[string]any{"ms": 60000})
		done <- err
	}()
	waitUntil(t, 10*time.Second, "the sleep call to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	cancel()
	<-done
	waitUntil(t, 10*time.Second, "the upstream handler to be cancelled", func() bool {
		_, err := os.Stat(filepath.Join(dir, "cancelled"))
		return err == nil
	})
}

// TestModernSubscribeUnoffered: on 2026-07-28, subscribing to a resource
// of a server that offers no subscriptions fails as it does on
// 2025-11-25 (there the server answers MethodNotFound itself).
func TestModernSubscribeUnoffered(t *testing.T) {
	s := server.NewMCPServer("nosub", "1", server.WithResourceCapabilities(false, true))
	s.AddResource(mcp.NewResource("n://a", "a"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "n://a", Text: "a"}}, nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	for _, rev := range []string{mcp.LATEST_PROTOCOL_VERSION, mcp.LATEST_LEGACY_PROTOCOL_VERSION} {
		t.Run(rev, func(t *testing.T) {
			m := startManager(t, map[string]config.ServerConfig{"n": {URL: ts.URL + "/mcp", Protocol: rev}}, Options{})
			var re *RPCError
			if err := m.Subscribe(context.Background(), "n", "n://a"); !errors.As(err, &re) || re.Code != mcp.METHOD_NOT_FOUND {
				t.Errorf("got %v, want the upstream's MethodNotFound", err)
			}
			read, err := m.ReadResource(context.Background(), "n", "n://a")
			if err != nil || len(read.Contents) != 1 {
				t.Errorf("resources/read: got %+v, %v", read, err)
			}
		})
	}
}

// TestModernListenGap: a list change an upstream makes while mcproxy's
// subscriptions/listen stream is not open yet (or is being reopened with a
// new filter) is announced to nobody; mcproxy re-lists when the stream's
// acknowledgement arrives, so the change still reaches its clients. The
// upstream here holds the first listen request until the tool and prompt
// are added, so without the re-list neither would ever arrive.
func TestModernListenGap(t *testing.T) {
	s := server.NewMCPServer("gap", "1", server.WithToolCapabilities(true), server.WithPromptCapabilities(true))
	s.AddTool(mcp.NewTool("first"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("first"), nil
	})
	release := make(chan struct{})
	var held atomic.Bool
	h := server.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"subscriptions/listen"`)) && held.CompareAndSwap(false, true) {
				<-release
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before ts.Close, which waits for the held handler
	tools := make(chan []config.Tool, 10)
	prompts := make(chan int, 10)
	m := startManager(t, map[string]config.ServerConfig{"g": {URL: ts.URL + "/mcp", Protocol: mcp.LATEST_PROTOCOL_VERSION}}, Options{
		OnToolsChanged:   func(_ string, ts []config.Tool) { tools <- ts },
		OnCatalogChanged: func(_ string, c *Catalog) { prompts <- len(c.Prompts) },
	})
	if st := statusOf(t, m, "g"); st.State != StateReady || st.Tools != 1 {
		t.Fatalf("got %+v, want ready with one tool", st)
	}
	waitUntil(t, 10*time.Second, "mcproxy's listen request to arrive", held.Load)
	s.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("late"), nil
	})
	s.AddPrompt(mcp.NewPrompt("hello"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	free()
	deadline := time.After(10 * time.Second)
	for gotTool, gotPrompt := false, false; !gotTool || !gotPrompt; {
		select {
		case ts := <-tools:
			gotTool = gotTool || slices.Contains(toolNames(ts), "g:late")
		case n := <-prompts:
			gotPrompt = gotPrompt || n == 1
		case <-deadline:
			t.Fatalf("within 10s of the listen stream opening: tool added %v, prompt added %v; want both re-listed", gotTool, gotPrompt)
		}
	}
}
