package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcproxy/mcproxy/internal/config"
)

// pagingItems is how many tools, prompts, resources and templates each
// upstream of the paging test offers: two of them make more than two pages.
const pagingItems = 130

// newManyUpstream is a real mcp-go server with pagingItems of everything.
// Every resource and template has the same name, as two servers' "README"
// would: only the URI tells them apart.
func newManyUpstream(name string) *mcpserver.MCPServer {
	us := mcpserver.NewMCPServer(name, "1", mcpserver.WithToolCapabilities(true), mcpserver.WithPromptCapabilities(true),
		mcpserver.WithResourceCapabilities(false, true))
	for i := range pagingItems {
		n := fmt.Sprintf("%03d", i)
		us.AddTool(mcp.NewTool("t"+n), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(n), nil
		})
		us.AddPrompt(mcp.NewPrompt("p"+n), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(n, nil), nil
		})
		uri := "many://" + name + "/r" + n
		us.AddResource(mcp.NewResource(uri, "doc"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: n}}, nil
		})
		us.AddResourceTemplate(mcp.NewResourceTemplate("many://"+name+"/t"+n+"/{x}", "doc"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return nil, nil
		})
	}
	return us
}

// testPageSize is the page size (list_page_size) the paging tests set.
const testPageSize = 100

// follow lists every page of one list through fetch (cursor in, items and
// next cursor out) and returns the items in order and the number of pages.
func follow(t *testing.T, what string, fetch func(mcp.Cursor) ([]string, mcp.Cursor, error)) ([]string, int) {
	t.Helper()
	var all []string
	var cursor mcp.Cursor
	for pages := 1; ; pages++ {
		items, next, err := fetch(cursor)
		if err != nil {
			t.Fatalf("%s page %d: %v", what, pages, err)
		}
		if len(items) > testPageSize {
			t.Fatalf("%s page %d holds %d items, more than a page (%d)", what, pages, len(items), testPageSize)
		}
		all = append(all, items...)
		if next == "" {
			return all, pages
		}
		if pages > 10 {
			t.Fatalf("%s: more than 10 pages", what)
		}
		cursor = next
	}
}

// TestFrontListsPaged: with two upstreams of 130 tools, prompts, resources
// and templates each, the front answers every list in pages of
// testPageSize, and a client that follows nextCursor (mcp-go's) gets each
// item exactly once, in key order; resources and templates that share one
// name are all there. A list that changes between pages loses nothing that
// stayed. A cursor that is not the front's is refused, saying what to do.
func TestFrontListsPaged(t *testing.T) {
	ups := map[string]*mcpserver.MCPServer{}
	servers := map[string]config.ServerConfig{}
	for _, name := range []string{"a", "b"} {
		ups[name] = newManyUpstream(name)
		ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(ups[name]))
		t.Cleanup(ts.Close)
		servers[name] = config.ServerConfig{URL: ts.URL + "/mcp"}
	}
	f := startCatalogFrontOpts(t, servers, Options{ListPageSize: testPageSize})
	c := connect(t, f, "streamable", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(t, "both upstreams' tools", func() bool { return len(f.Exposed(KindTools)) == 2*pagingItems })

	lists := map[string]func(mcp.Cursor) ([]string, mcp.Cursor, error){
		"tools/list": func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
			res, err := c.ListToolsByPage(ctx, mcp.ListToolsRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cur}}})
			if err != nil {
				return nil, "", err
			}
			var out []string
			for _, x := range res.Tools {
				out = append(out, x.Name)
			}
			return out, res.NextCursor, nil
		},
		"prompts/list": func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
			res, err := c.ListPromptsByPage(ctx, mcp.ListPromptsRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cur}}})
			if err != nil {
				return nil, "", err
			}
			var out []string
			for _, x := range res.Prompts {
				out = append(out, x.Name)
			}
			return out, res.NextCursor, nil
		},
		"resources/list": func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
			res, err := c.ListResourcesByPage(ctx, mcp.ListResourcesRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cur}}})
			if err != nil {
				return nil, "", err
			}
			var out []string
			for _, x := range res.Resources {
				out = append(out, x.URI)
			}
			return out, res.NextCursor, nil
		},
		"resources/templates/list": func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
			res, err := c.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{PaginatedRequest: mcp.PaginatedRequest{Params: mcp.PaginatedParams{Cursor: cur}}})
			if err != nil {
				return nil, "", err
			}
			var out []string
			for _, x := range res.ResourceTemplates {
				out = append(out, x.URITemplate.Raw())
			}
			return out, res.NextCursor, nil
		},
	}
	want := func(list, server string, i int) string {
		n := fmt.Sprintf("%03d", i)
		switch list {
		case "tools/list":
			return server + "__t" + n
		case "prompts/list":
			return server + "__p" + n
		case "resources/list":
			return "many://" + server + "/r" + n
		}
		return "many://" + server + "/t" + n + "/{x}"
	}
	for list, fetch := range lists {
		got, pages := follow(t, list, fetch)
		var exp []string
		for _, server := range []string{"a", "b"} {
			for i := range pagingItems {
				exp = append(exp, want(list, server, i))
			}
		}
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("%s over %d pages: got %d items, want the %d of both servers once each, in order", list, pages, len(got), len(exp))
		}
		if wantPages := (len(exp) + testPageSize - 1) / testPageSize; pages != wantPages {
			t.Errorf("%s: %d pages, want %d", list, pages, wantPages)
		}
	}
	// mcp-go's ListTools follows the cursors by itself.
	if all, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil || len(all.Tools) != 2*pagingItems {
		t.Errorf("ListTools (following cursors): got %v tools, %v; want %d", len(all.Tools), err, 2*pagingItems)
	}

	t.Run("list changes between pages", func(t *testing.T) {
		first, next, err := lists["resources/list"]("")
		if err != nil || next == "" {
			t.Fatalf("first page: %v, next %q", err, next)
		}
		// One resource already sent and one still to come go away.
		if !strings.HasPrefix(first[3], "many://a/") {
			t.Fatalf("first page: %q, want a's resources first", first[:4])
		}
		ups["a"].DeleteResources(first[3])
		ups["b"].DeleteResources("many://b/r100")
		// What the front lists (mcp-go's registrations), not only what its
		// catalog holds, which changes a moment before.
		waitFor(t, "the front to list the resources without the two", func() bool {
			all, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			return err == nil && len(all.Resources) == 2*pagingItems-2
		})
		rest, _ := follow(t, "resources/list after the change", func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
			if cur == "" {
				cur = next
			}
			return lists["resources/list"](cur)
		})
		var exp []string
		for _, server := range []string{"a", "b"} {
			for i := range pagingItems {
				if u := want("resources/list", server, i); u > first[len(first)-1] && u != "many://b/r100" {
					exp = append(exp, u)
				}
			}
		}
		slices.Sort(exp)
		if !slices.Equal(rest, exp) {
			t.Errorf("the pages after the change: got %d items, want the %d that stayed after the first page", len(rest), len(exp))
		}
	})

	t.Run("bad cursors", func(t *testing.T) {
		_, toolsCursor, _ := lists["tools/list"]("")
		for _, tc := range []struct {
			method string
			cursor mcp.Cursor
			want   string
		}{
			{"resources/list", "garbage", `cursor "garbage" is not one mcproxy gave out`},
			{"prompts/list", toolsCursor, "belongs to the tools list, not the prompts list"},
		} {
			resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
				JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(9)),
				Method: tc.method, Params: map[string]any{"cursor": tc.cursor},
			})
			if err != nil {
				t.Fatal(err)
			}
			// -32600: mcp-go's request hook can refuse with no other code
			// (docs/passthrough.md).
			if resp.Error == nil || resp.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(resp.Error.Message, tc.want) || !strings.Contains(resp.Error.Message, "leave cursor out to list from the start") {
				t.Errorf("%s with cursor %q: got %+v, want an error saying %q and what to do", tc.method, tc.cursor, resp, tc.want)
			}
		}
	})
}

// TestFrontListsOnePageByDefault: without list_page_size the front answers
// every list whole, with no nextCursor, since Claude Code, Claude.ai and
// Codex read only the first page of tools/list.
func TestFrontListsOnePageByDefault(t *testing.T) {
	servers := map[string]config.ServerConfig{}
	for _, name := range []string{"a", "b"} {
		ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(newManyUpstream(name)))
		t.Cleanup(ts.Close)
		servers[name] = config.ServerConfig{URL: ts.URL + "/mcp"}
	}
	f := startCatalogFront(t, servers)
	c := connect(t, f, "streamable", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitFor(t, "both upstreams' tools", func() bool { return len(f.Exposed(KindTools)) == 2*pagingItems })
	// The catalog (prompts, resources, templates) lands a moment after the
	// tools: wait until the last list is whole.
	waitFor(t, "both upstreams' templates", func() bool {
		r, err := c.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{})
		return err == nil && len(r.ResourceTemplates) == 2*pagingItems
	})

	tools, err := c.ListToolsByPage(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 2*pagingItems || tools.NextCursor != "" {
		t.Errorf("tools/list: %v; got %d tools and cursor %q, want all %d in one page", err, len(tools.Tools), tools.NextCursor, 2*pagingItems)
	}
	prompts, err := c.ListPromptsByPage(ctx, mcp.ListPromptsRequest{})
	if err != nil || len(prompts.Prompts) != 2*pagingItems || prompts.NextCursor != "" {
		t.Errorf("prompts/list: %v; got %d prompts and cursor %q, want all %d in one page", err, len(prompts.Prompts), prompts.NextCursor, 2*pagingItems)
	}
	res, err := c.ListResourcesByPage(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(res.Resources) != 2*pagingItems || res.NextCursor != "" {
		t.Errorf("resources/list: %v; got %d resources and cursor %q, want all %d in one page", err, len(res.Resources), res.NextCursor, 2*pagingItems)
	}
	tmpl, err := c.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(tmpl.ResourceTemplates) != 2*pagingItems || tmpl.NextCursor != "" {
		t.Errorf("resources/templates/list: %v; got %d templates and cursor %q, want all %d in one page", err, len(tmpl.ResourceTemplates), tmpl.NextCursor, 2*pagingItems)
	}
}
