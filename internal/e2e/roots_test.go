package e2e

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcproxy/mcproxy/internal/testenv"
)

// rootsSession is one MCP client session with roots of its own, which
// it can change.
type rootsSession struct {
	*client.Client
	mu    sync.Mutex
	roots []string
}

func (s *rootsSession) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	for _, r := range s.roots {
		res.Roots = append(res.Roots, mcp.Root{URI: r, Name: filepath.Base(r)})
	}
	return res, nil
}

// change replaces the session's roots and tells mcproxy
// (notifications/roots/list_changed).
func (s *rootsSession) change(t *testing.T, roots ...string) {
	t.Helper()
	s.mu.Lock()
	s.roots = roots
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.RootListChanges(ctx); err != nil {
		t.Fatalf("sending roots/list_changed: %v", err)
	}
}

// dialRoots opens a 2025-11-25 session on base that declares roots. It
// keeps the standalone GET stream open, as real clients do: mcp-go's
// front asks for roots only there.
func dialRoots(t *testing.T, base string, roots ...string) *rootsSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	s := &rootsSession{roots: roots}
	s.Client = client.NewClient(tr, client.WithRootsHandler(s), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	t.Cleanup(func() { s.Close() })
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	initialize(t, s.Client)
	return s
}

// fileURI is the file:// URI of a directory.
func fileURI(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

// TestRootsPerSession: two MCP sessions with different roots share one
// connection to each of two servers that keep roots as connection state:
// npm server-everything (stdio; get-roots-list reports the roots it got
// last), and an mcp-go server over streamable HTTP that asks on its first
// call and on roots/list_changed, as npm server-filesystem does. Each
// session's calls see its own roots, interleaved, and after B changes its
// roots B's calls see the new ones while A's still see A's.
//
// server-filesystem itself is not used: it applies the roots it gets
// after validating them asynchronously, so a call right after its re-ask
// sees the roots it held before, whatever mcproxy waits for (no message
// says when it is done).
func TestRootsPerSession(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rootA, rootB, rootB2 := mk("root-a"), mk("root-b"), mk("changed-b")
	cache := newRootsUpstream(t)
	config := writeConfigFile(t, filepath.Join(dir, "config.json"), map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testenv.NodeBin(t, "mcp-server-everything")},
			"cache":      map[string]any{"url": cache.url()},
		},
		"data_dir":     filepath.Join(dir, "data"),
		"mode":         "direct",
		"init_timeout": "60s",
		"noa":          map[string]any{"enabled": false},
	})
	base, _ := serveHTTP(t, config)
	a := dialRoots(t, base, fileURI(rootA))
	b := dialRoots(t, base, fileURI(rootB))
	// server-everything offers get-roots-list once initialized, then says
	// tools/list_changed.
	waitFor(t, time.Minute, "server-everything's get-roots-list", func() bool {
		return slices.Contains(listTools(t, a.Client), "everything__get-roots-list")
	})

	check := func(who string, s *rootsSession, root string, others ...string) {
		t.Helper()
		for tool, want := range map[string]string{
			"everything__get-roots-list": "URI: " + fileURI(root),
			"cache__held":                "held=" + fileURI(root),
		} {
			got := text(callTool(t, s.Client, tool, nil))
			if !strings.Contains(got, want) {
				t.Errorf("%s: %s: got %q, want it to contain %q", who, tool, got, want)
			}
			for _, o := range others {
				if strings.Contains(got, o) {
					t.Errorf("%s: %s: got %q, which names another session's root %s", who, tool, got, o)
				}
			}
		}
	}
	check("A", a, rootA, rootB)
	check("B", b, rootB, rootA)
	check("A again", a, rootA, rootB)
	check("B again", b, rootB, rootA)

	b.change(t, fileURI(rootB2))
	check("B after changing its roots", b, rootB2, rootA, rootB)
	check("A after B changed its roots", a, rootA, rootB2)
	check("B once more", b, rootB2, rootA)
}

// newRootsUpstream is an mcp-go server that keeps roots as connection
// state: it asks roots/list on its first call and on each
// roots/list_changed (answered before that notification's POST returns),
// and its tool held reports what it got last.
func newRootsUpstream(t *testing.T) *goUpstream {
	u := newGoUpstream(t, "cache")
	var (
		mu    sync.Mutex
		held  []string
		known bool
	)
	ask := func(ctx context.Context) {
		res, err := u.mcp.RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		held, known = nil, true
		for _, r := range res.Roots {
			held = append(held, r.URI)
		}
	}
	u.mcp.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(ctx context.Context, _ mcp.JSONRPCNotification) {
		ask(ctx)
	})
	u.mcp.AddTool(mcp.NewTool("held", mcp.WithDescription("Report the roots the server holds.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			k := known
			mu.Unlock()
			if !k {
				ask(ctx)
			}
			mu.Lock()
			defer mu.Unlock()
			return mcp.NewToolResultText("held=" + strings.Join(held, ",")), nil
		})
	return u
}
