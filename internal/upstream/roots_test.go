package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// runRootsPeer serves an upstream that keeps its roots as connection
// state, as npm server-filesystem does: it asks roots/list on its first
// call and after each roots/list_changed, and its tools use what it got
// last. held() and the resource roots://held report those roots; hold() reports them once cancelled,
// and writes dir/holding while it waits. Roots that change while a call
// is running write dir/overlap (a call ran while another session's roots
// were taken); a failed ask writes dir/ask-failed; each roots/list_changed
// adds a byte to dir/changed.
func runRootsPeer() int {
	dir := os.Getenv(peerDirEnv)
	s := server.NewMCPServer("mcproxy-roots-peer", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false))
	var (
		mu      sync.Mutex
		roots   []string
		known   bool
		running int
		pending int // re-asks not answered yet
	)
	settled := sync.NewCond(&mu)
	ask := func(ctx context.Context) {
		res, err := s.RequestRoots(ctx, mcp.ListRootsRequest{})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			_ = os.WriteFile(filepath.Join(dir, "ask-failed"), []byte(err.Error()), 0o644)
			return
		}
		var got []string
		for _, r := range res.Roots {
			got = append(got, r.URI)
		}
		if running > 0 && known && !slices.Equal(got, roots) {
			_ = os.WriteFile(filepath.Join(dir, "overlap"), []byte(strings.Join(roots, ",")+" -> "+strings.Join(got, ",")), 0o644)
		}
		roots, known = got, true
	}
	// The re-ask runs off the reader (which must read its answer), and a
	// call waits for it, as a server that applies roots before it serves
	// the next message does (server-everything).
	s.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(ctx context.Context, _ mcp.JSONRPCNotification) {
		if f, err := os.OpenFile(filepath.Join(dir, "changed"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = f.Write([]byte{1})
			f.Close()
		}
		mu.Lock()
		pending++
		mu.Unlock()
		go func() {
			ask(context.WithoutCancel(ctx))
			mu.Lock()
			pending--
			settled.Broadcast()
			mu.Unlock()
		}()
	})
	held := func(ctx context.Context) string {
		mu.Lock()
		for pending > 0 {
			settled.Wait()
		}
		k := known
		mu.Unlock()
		if !k {
			ask(ctx)
		}
		mu.Lock()
		defer mu.Unlock()
		return "roots=" + strings.Join(roots, ",")
	}
	enter := func(d int) {
		mu.Lock()
		running += d
		mu.Unlock()
	}
	s.AddTool(mcp.NewTool("held", mcp.WithDescription("Report the roots the server holds.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out := held(ctx)
			enter(1)
			defer enter(-1)
			return mcp.NewToolResultText(out), nil
		})
	s.AddTool(mcp.NewTool("hold", mcp.WithDescription("Wait until cancelled, then report the roots.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out := held(ctx)
			enter(1)
			defer enter(-1)
			_ = os.WriteFile(filepath.Join(dir, "holding"), []byte("1"), 0o644)
			<-ctx.Done()
			return mcp.NewToolResultText(out), nil
		})
	s.AddResource(mcp.NewResource("roots://held", "held roots"),
		func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "roots://held", Text: held(ctx)}}, nil
		})
	if err := server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "peer:", err)
		return 1
	}
	return 0
}

// rootsClient is a front session as the manager sees it: its roots, and
// how often it was asked for them.
type rootsClient struct {
	session string
	mu      sync.Mutex
	roots   []string
	asked   atomic.Int32
	ended   chan struct{}
	refuse  bool // answer roots/list with an error (no roots capability)
}

func newRootsClient(session string, roots ...string) *rootsClient {
	return &rootsClient{session: session, roots: roots, ended: make(chan struct{})}
}

func (c *rootsClient) Session() string                            { return c.session }
func (c *rootsClient) WantsProgress() bool                        { return false }
func (c *rootsClient) Progress(map[string]any)                    {}
func (c *rootsClient) Log(string, mcp.LoggingMessageNotification) {}
func (c *rootsClient) Ended() <-chan struct{}                     { return c.ended }

func (c *rootsClient) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.New("no sampling")
}

func (c *rootsClient) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, errors.New("no elicitation")
}

func (c *rootsClient) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	c.asked.Add(1)
	if c.refuse {
		return nil, errors.New(`declared no "roots" capability`)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, r := range c.roots {
		res.Roots = append(res.Roots, mcp.Root{URI: r})
	}
	return res, nil
}

// HasRoots implements RootsPeer: a client that refuses roots/list declared
// no roots capability.
func (c *rootsClient) HasRoots() bool { return !c.refuse }

func (c *rootsClient) set(roots ...string) {
	c.mu.Lock()
	c.roots = roots
	c.mu.Unlock()
}

// TestRootsPerSession: a server that keeps roots per connection sees the
// roots of the session whose call (or resources/read) it serves
// (interleaved, and after one changes them), calls of two sessions never overlap on it, and a session
// that ended is asked nothing more.
func TestRootsPerSession(t *testing.T) {
	sc, dir := peerServer(t, "roots")
	m := startManager(t, map[string]config.ServerConfig{"fs": sc}, Options{})
	a := newRootsClient("a", "file:///a")
	b := newRootsClient("b", "file:///b")
	callAs := func(c *rootsClient, tool string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(WithPeer(context.Background(), c), 30*time.Second)
		defer cancel()
		res, err := m.Call(ctx, "fs", tool, nil)
		if err != nil {
			t.Fatalf("%s calling %s: %v", c.session, tool, err)
		}
		return text(res)
	}
	for i, step := range []struct {
		c    *rootsClient
		want string
	}{{a, "roots=file:///a"}, {b, "roots=file:///b"}, {a, "roots=file:///a"}, {a, "roots=file:///a"}, {b, "roots=file:///b"}} {
		if got := callAs(step.c, "held"); got != step.want {
			t.Errorf("call %d by %s: got %q, want %q", i, step.c.session, got, step.want)
		}
	}

	// A resources/read runs under its client's roots too.
	rctx, rcancel := context.WithTimeout(WithPeer(context.Background(), a), 30*time.Second)
	defer rcancel()
	read, err := m.ReadResource(rctx, "fs", "roots://held")
	if err != nil {
		t.Fatalf("a reading roots://held: %v", err)
	}
	if got := read.Contents[0].(mcp.TextResourceContents).Text; got != "roots=file:///a" {
		t.Errorf("a's resources/read after b's call: got %q, want roots=file:///a", got)
	}
	if got := callAs(b, "held"); got != "roots=file:///b" {
		t.Errorf("b after a's resources/read: got %q, want roots=file:///b", got)
	}

	// b changes its roots while the server holds them: the server is told
	// and b's next call sees the new ones; a's still see a's.
	b.set("file:///b2")
	m.RootsChanged(WithPeer(context.Background(), b))
	if got := callAs(b, "held"); got != "roots=file:///b2" {
		t.Errorf("b after changing its roots: got %q, want roots=file:///b2", got)
	}
	if got := callAs(a, "held"); got != "roots=file:///a" {
		t.Errorf("a after b changed its roots: got %q, want roots=file:///a", got)
	}

	// a's call is in flight on the server: b's waits for it to end.
	s := sessionOf(t, m, "fs")
	hctx, release := context.WithCancel(WithPeer(context.Background(), a))
	defer release()
	held := make(chan string, 1)
	go func() {
		res, err := m.Call(hctx, "fs", "hold", nil)
		if err == nil {
			err = errors.New(text(res))
		}
		held <- err.Error()
	}()
	waitUntil(t, 20*time.Second, "a's call to be held by the server", func() bool { return marked(dir, "holding") })
	bres := make(chan string, 1)
	go func() { bres <- callAs(b, "held") }()
	waitUntil(t, 20*time.Second, "b's call to queue behind a's (or to run)", func() bool {
		s.calls.mu.Lock()
		defer s.calls.mu.Unlock()
		return len(s.calls.roots.queue) == 1 || len(bres) > 0
	})
	var got string
	select {
	case got = <-bres:
		t.Errorf("b's call ran while a's was in flight: %q", got)
	default:
	}
	release()
	<-held
	if got == "" {
		got = <-bres
	}
	if got != "roots=file:///b2" {
		t.Errorf("b after a's held call: got %q, want roots=file:///b2", got)
	}
	if marked(dir, "overlap") {
		t.Error("the server took another session's roots while a call was running")
	}

	// b ends: a re-ask with no call in flight is not answered with its roots.
	if marked(dir, "ask-failed") {
		t.Fatal("a roots/list of the server failed before any session ended")
	}
	close(b.ended)
	before := b.asked.Load()
	m.RootsChanged(context.Background())
	waitUntil(t, 20*time.Second, "the server's re-ask to fail", func() bool { return marked(dir, "ask-failed") })
	if n := b.asked.Load(); n != before {
		t.Errorf("b was asked for its roots %d times after it ended", n-before)
	}
	if got := callAs(a, "held"); got != "roots=file:///a" {
		t.Errorf("a after b ended: got %q, want roots=file:///a", got)
	}

	// A session that cannot answer roots/list gets no call run under a's.
	c := newRootsClient("c")
	c.refuse = true
	ctx, cancel := context.WithTimeout(WithPeer(context.Background(), c), 30*time.Second)
	defer cancel()
	res, err := m.Call(ctx, "fs", "held", nil)
	if err == nil || !errors.Is(err, errRootsRefused) {
		t.Errorf("c, which cannot answer roots/list: got %v, %v; want the call refused (errRootsRefused)", res, err)
	}
}

// TestRootlessCallerNotResynced: a client session without roots, calling
// a server that asked for roots and holds nobody's, is not made to have
// the server ask again before each call (issue 28: a roots/list_changed,
// the re-ask and a ping per call, all for the same refusal), and still
// gets no call run under another session's roots.
func TestRootlessCallerNotResynced(t *testing.T) {
	t.Parallel()
	sc, dir := peerServer(t, "roots")
	m := startManager(t, map[string]config.ServerConfig{"fs": sc}, Options{})
	call := func(c *rootsClient) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(WithPeer(context.Background(), c), 30*time.Second)
		defer cancel()
		res, err := m.Call(ctx, "fs", "held", nil)
		if err != nil {
			return "", err
		}
		return text(res), nil
	}
	r := newRootsClient("rootless")
	r.refuse = true
	for i := range 3 {
		if got, err := call(r); err != nil || got != "roots=" {
			t.Fatalf("call %d of the rootless session: got %q, %v; want roots= (it gave none)", i, got, err)
		}
	}
	if !marked(dir, "ask-failed") {
		t.Fatal("the server never asked the rootless session for its roots")
	}
	if st, err := os.Stat(filepath.Join(dir, "changed")); err == nil {
		t.Errorf("the server was told roots/list_changed %d times during the rootless session's calls, want never", st.Size())
	}
	a := newRootsClient("a", "file:///a")
	if got, err := call(a); err != nil || got != "roots=file:///a" {
		t.Fatalf("a's call: got %q, %v; want roots=file:///a", got, err)
	}
	if _, err := call(r); !errors.Is(err, errRootsRefused) {
		t.Errorf("the rootless session after a's call: got %v, want the call refused (errRootsRefused)", err)
	}
}

// sessionOf is the live session of a ready server.
func sessionOf(t *testing.T, m *Manager, server string) *session {
	t.Helper()
	l := m.links[server]
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess == nil {
		t.Fatalf("%s has no session", server)
	}
	return l.sess
}

func marked(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
