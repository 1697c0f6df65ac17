package passthrough

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The front pages its own lists (tools/list, prompts/list, resources/list,
// resources/templates/list: issue #15, "aggregated over every upstream
// (paginated)"). mcp-go's own pagination keys a page on the item's name,
// and resource and template names need not be unique (two servers'
// "README"), so items at a page's edge could be skipped; the front pages
// them itself instead, by a key that is unique per list: a tool's or
// prompt's name, a resource's URI, a template's text. A cursor says which
// list it belongs to and the key of the last item sent; the next page
// starts after that key, so a list that changes between pages loses or
// repeats nothing that stayed, and only what came or went before the key
// is missed (list_changed tells the client to list again).
//
// mcp-go lists everything (the before-hooks take the cursor off the request
// and keep it aside) and the after-hooks cut the page. A cursor that is not
// one of ours is refused before mcp-go sees the request, saying what to do;
// mcp-go's request hook can only refuse with -32600 (invalid request), so
// that is its code, not the -32602 the specification suggests.

// Paging is off unless list_page_size sets a page size (Options.ListPageSize):
// Claude Code, Claude.ai and Codex read only the first page of tools/list and
// would lose every tool after it.

// The lists the front pages, as a cursor names them.
const (
	listTools     = "tools"
	listPrompts   = "prompts"
	listResources = "resources"
	listTemplates = "templates"
)

// pagedMethods maps each paged method to its list.
var pagedMethods = map[string]string{
	string(mcp.MethodToolsList):              listTools,
	string(mcp.MethodPromptsList):            listPrompts,
	string(mcp.MethodResourcesList):          listResources,
	string(mcp.MethodResourcesTemplatesList): listTemplates,
}

// pager cuts the front's lists into pages of size.
type pager struct {
	size int
	// after holds, from the before-hook to the after-hook of one request
	// (keyed by the request, which both hooks are handed), the key the
	// client's cursor points after.
	after sync.Map
}

// pageCursor is what a cursor encodes.
type pageCursor struct {
	List  string `json:"l"`
	After string `json:"a"`
}

func encodeCursor(list, after string) mcp.Cursor {
	b, _ := json.Marshal(pageCursor{List: list, After: after})
	return mcp.Cursor(base64.RawURLEncoding.EncodeToString(b))
}

// decodeCursor reads a cursor of list, saying what is wrong with it.
func decodeCursor(list string, cursor mcp.Cursor) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(string(cursor))
	var c pageCursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.List == "" {
		return "", fmt.Errorf("cursor %q is not one mcproxy gave out", cursor)
	}
	if c.List != list {
		return "", fmt.Errorf("cursor %q belongs to the %s list, not the %s list", cursor, c.List, list)
	}
	return c.After, nil
}

// hook registers the pager with mcp-go's hooks. Register it after every
// other after-list hook that removes items (hideCatchAll), so pages are cut
// from what the client may see.
func (p *pager) hook(h *mcpserver.Hooks) {
	h.AddOnRequestInitialization(p.check)
	h.AddBeforeListTools(func(_ context.Context, _ any, req *mcp.ListToolsRequest) { p.take(req, listTools, &req.Params.Cursor) })
	h.AddBeforeListPrompts(func(_ context.Context, _ any, req *mcp.ListPromptsRequest) {
		p.take(req, listPrompts, &req.Params.Cursor)
	})
	h.AddBeforeListResources(func(_ context.Context, _ any, req *mcp.ListResourcesRequest) {
		p.take(req, listResources, &req.Params.Cursor)
	})
	h.AddBeforeListResourceTemplates(func(_ context.Context, _ any, req *mcp.ListResourceTemplatesRequest) {
		p.take(req, listTemplates, &req.Params.Cursor)
	})
	h.AddAfterListTools(func(_ context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if res != nil {
			res.Tools, res.NextCursor = cut(p, req, listTools, res.Tools, func(t mcp.Tool) string { return t.Name })
		}
	})
	h.AddAfterListPrompts(func(_ context.Context, _ any, req *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		if res != nil {
			res.Prompts, res.NextCursor = cut(p, req, listPrompts, res.Prompts, func(x mcp.Prompt) string { return x.Name })
		}
	})
	h.AddAfterListResources(func(_ context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		if res != nil {
			res.Resources, res.NextCursor = cut(p, req, listResources, res.Resources, func(r mcp.Resource) string { return r.URI })
		}
	})
	h.AddAfterListResourceTemplates(func(_ context.Context, _ any, req *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		if res != nil {
			res.ResourceTemplates, res.NextCursor = cut(p, req, listTemplates, res.ResourceTemplates, templateKey)
		}
	})
	// A list request that fails never reaches its after-hook.
	h.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, message any, _ error) {
		p.after.Delete(message)
	})
}

// check refuses a paged list request whose cursor is not one of ours,
// before mcp-go handles it.
func (p *pager) check(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"cursor"`)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Cursor mcp.Cursor `json:"cursor"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Params.Cursor == "" {
		return nil
	}
	list, ok := pagedMethods[req.Method]
	if !ok {
		return nil
	}
	if _, err := decodeCursor(list, req.Params.Cursor); err != nil {
		return fmt.Errorf("invalid params: %s: %w; pass the nextCursor of the previous %s answer unchanged, or leave cursor out to list from the start",
			req.Method, err, req.Method)
	}
	return nil
}

// take moves the request's cursor aside, so mcp-go lists everything.
func (p *pager) take(req any, list string, cursor *mcp.Cursor) {
	if *cursor == "" {
		return
	}
	if after, err := decodeCursor(list, *cursor); err == nil {
		p.after.Store(req, after)
	}
	*cursor = ""
}

// cut returns the page of items that follows the request's cursor, ordered
// by key, with the cursor of the next page ("" on the last). items is not
// modified.
func cut[T any](p *pager, req any, list string, items []T, key func(T) string) ([]T, mcp.Cursor) {
	sorted := slices.SortedFunc(slices.Values(items), func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	start := 0
	if after, ok := p.after.LoadAndDelete(req); ok {
		start, _ = slices.BinarySearchFunc(sorted, after.(string), func(x T, k string) int {
			if key(x) <= k {
				return -1
			}
			return 1
		})
	}
	end := min(start+p.size, len(sorted))
	page := sorted[start:end]
	if page == nil {
		page = []T{}
	}
	if end == len(sorted) {
		return page, ""
	}
	return page, encodeCursor(list, key(page[len(page)-1]))
}
