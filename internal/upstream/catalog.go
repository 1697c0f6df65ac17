package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// Catalog is what a ready server offers besides tools: what it said about
// itself at initialize, and its prompts, resources and resource templates
// (every page of each list). The manager hands a server's catalog to
// Options.OnCatalogChanged when the server comes up, when it sends a
// prompts or resources list_changed, and nil when it goes down.
type Catalog struct {
	Server string
	// Instructions are the server's initialize instructions ("" if none).
	Instructions string
	// Capabilities are what the server advertised at initialize.
	Capabilities mcp.ServerCapabilities
	Prompts      []mcp.Prompt           // sorted by name
	Resources    []mcp.Resource         // sorted by URI
	Templates    []mcp.ResourceTemplate // sorted by URI template
}

// clone returns a copy whose slices the caller may modify.
func (c *Catalog) clone() *Catalog {
	if c == nil {
		return nil
	}
	out := *c
	out.Prompts = slices.Clone(c.Prompts)
	out.Resources = slices.Clone(c.Resources)
	out.Templates = slices.Clone(c.Templates)
	return &out
}

// listCatalog reads the prompts, resources and templates s's server
// advertised at initialize. A list the server does not offer stays empty.
func (s *session) listCatalog(ctx context.Context, server string, info *mcp.InitializeResult) (*Catalog, error) {
	c := &Catalog{Server: server, Instructions: info.Instructions, Capabilities: info.Capabilities}
	if info.Capabilities.Prompts != nil {
		res, err := s.client.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return nil, fmt.Errorf("listing prompts: %w", err)
		}
		c.Prompts = dedupe(res.Prompts, func(p mcp.Prompt) string { return p.Name })
	}
	if info.Capabilities.Resources != nil {
		res, err := s.client.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return nil, fmt.Errorf("listing resources: %w", err)
		}
		c.Resources = dedupe(res.Resources, func(r mcp.Resource) string { return r.URI })
		tres, err := s.client.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil && !isMethodNotFound(err) {
			return nil, fmt.Errorf("listing resource templates: %w", err)
		}
		if err == nil {
			c.Templates = dedupe(tres.ResourceTemplates, templateKey)
		}
	}
	return c, nil
}

// templateKey is a template's identity: its URI template text.
func templateKey(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil || t.URITemplate.Template == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

// dedupe sorts items by key and keeps the first of each key (a server that
// lists one twice, say across pages that shifted, gets it once).
func dedupe[T any](items []T, key func(T) string) []T {
	seen := make(map[string]bool, len(items))
	out := make([]T, 0, len(items))
	for _, it := range items {
		k := key(it)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, it)
	}
	slices.SortStableFunc(out, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return out
}

func isMethodNotFound(err error) bool { return errors.Is(err, mcp.ErrMethodNotFound) }

// catalogNotification routes the upstream notifications about its prompts
// and resources: a list_changed asks the supervisor to re-list, an updated
// resource goes to Options.OnResourceUpdated.
func (l *link) catalogNotification(s *session, n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationPromptsListChanged), string(mcp.MethodNotificationResourcesListChanged):
		s.signalCatalogRefresh()
	case string(mcp.MethodNotificationResourceUpdated):
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		if uri == "" || l.m.opts.OnResourceUpdated == nil {
			return
		}
		defer goroutine.Recover(l.log, "OnResourceUpdated callback", nil)
		l.m.opts.OnResourceUpdated(l.name, uri)
	}
}

// refreshCatalog re-lists prompts, resources and templates after a
// list_changed and reports the catalog if it differs.
func (l *link) refreshCatalog(ctx context.Context, s *session) {
	rctx, cancel := context.WithTimeout(ctx, l.init.d)
	defer cancel()
	l.mu.Lock()
	old := l.catalog
	l.mu.Unlock()
	if old == nil {
		return
	}
	c, err := s.listCatalog(rctx, l.name, &mcp.InitializeResult{Instructions: old.Instructions, Capabilities: old.Capabilities})
	if err != nil {
		l.refreshFailed(ctx, rctx, s, "prompts and resources", err)
		return
	}
	l.mu.Lock()
	if l.sess != s {
		l.mu.Unlock()
		return
	}
	same := reflect.DeepEqual(c, l.catalog)
	l.catalog = c
	l.mu.Unlock()
	if same {
		return
	}
	l.log.Info("upstream prompts or resources changed",
		zap.Int("prompts", len(c.Prompts)), zap.Int("resources", len(c.Resources)), zap.Int("templates", len(c.Templates)))
	l.notifyCatalog(c)
}

// refreshFailed handles a re-list after list_changed that failed: a lost
// connection takes the session down, anything else keeps the previous
// lists.
func (l *link) refreshFailed(ctx, rctx context.Context, s *session, what string, err error) {
	switch {
	case ctx.Err() != nil:
	case isConnErr(err) && rctx.Err() == nil:
		l.markLost(s, fmt.Errorf("refreshing %s: %w", what, err))
	default:
		l.log.Warn("refreshing "+what+" after list_changed failed; keeping the previous list", zap.Error(err))
	}
}

// notifyCatalog hands the catalog to OnCatalogChanged (nil = went down).
func (l *link) notifyCatalog(c *Catalog) {
	cb := l.m.opts.OnCatalogChanged
	if cb == nil {
		return
	}
	defer goroutine.Recover(l.log, "OnCatalogChanged callback", nil)
	cb(l.name, c.clone())
}

// resubscribe renews, on a fresh session, every resource subscription the
// front holds with this server, so a restarted upstream keeps sending
// notifications/resources/updated. Failures are logged: the server is up and
// serves everything else.
func (l *link) resubscribe(ctx context.Context, s *session) {
	l.mu.Lock()
	uris := slices.Sorted(maps.Keys(l.subs))
	l.mu.Unlock()
	for _, uri := range uris {
		if err := s.rpc(ctx, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri}, nil); err != nil {
			l.log.Warn("renewing a resource subscription on the new connection failed", zap.String("uri", uri), zap.Error(err))
			continue
		}
		l.log.Info("renewed resource subscription", zap.String("uri", uri))
	}
}

// RPCError is a JSON-RPC error an upstream answered a request with.
type RPCError struct {
	Server  string
	Method  string
	Code    int
	Message string
	Data    any
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("upstream %q answered %s with error %d: %s", e.Server, e.Method, e.Code, e.Message)
}
