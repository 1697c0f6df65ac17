// Package passthrough passes on to an MCP front's clients everything the
// upstream MCP servers offer besides tools, and relays what an upstream
// sends while it serves a call.
//
// It owns: the aggregated prompts, resources and resource templates with
// their routes (catalog.go, prompts.go, resources.go), resource
// subscriptions and their updates, argument completion, the rewriting of
// URIs two servers claim (urirewrite.go), the paging of the front's lists,
// tools/list included (paging.go), per-session and per-request log levels
// (loglevel.go), and the relay of a call's progress, log messages and the
// upstream's sampling, elicitation and roots requests to the client session
// that made the call, a stateless 2026-07-28 client through multi
// round-trip results (relay.go).
//
// It plugs into an mcp-go server that someone else builds and serves (the
// MCP front, internal/server): ServerOptions and Middleware go in its
// options, Hook on its hooks, Attach after it is built. It reaches the
// upstreams only through the interfaces it declares (Catalogs, Relayer),
// which *upstream.Manager implements. It knows no tools of its own, no meta
// tools, noa or transports; it must not import internal/server, and never
// decides where logs go.
//
// Its tests here drive its parts directly; what needs a client calling
// tools through a front (relay, log levels, paging, resources, URI
// rewriting, protocol revisions) is tested in internal/server, beside the
// front's test helpers.
package passthrough

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Deps are what the passthrough reaches the upstreams through.
type Deps struct {
	// Catalogs serves the upstreams' prompts, resources and completion; nil
	// means the front offers tools only (no prompt or resource methods).
	Catalogs Catalogs
	// Relayer applies log levels and roots changes upstream; nil means they
	// are not forwarded (what a call sends is still relayed).
	Relayer Relayer
	// Logger receives operational logs; nil means no logging.
	Logger *zap.Logger
}

// Options tune the passthrough. The zero value passes lists on in one page
// and waits up to ten seconds at initialize for the upstreams.
type Options struct {
	// Prefix is what goes in front of a server's prompt names
	// (config.ServerConfig.NamePrefix); nil means server + "__".
	Prefix func(server string) string
	// ListPageSize is how many items one page of the front's lists holds
	// (config list_page_size); zero answers each list in one page.
	ListPageSize int
	// Started is closed once the upstreams have had their first chance to
	// connect: initialize then advertises what they offer, and a
	// resources/subscribe waits for it so its owner is known. nil means
	// they already have.
	Started <-chan struct{}
	// Settle, when set, is how initialize waits for the upstreams before it
	// answers with their capabilities and instructions (the MCP front's
	// start grace); nil waits for Started, at most ten seconds.
	Settle func(ctx context.Context) error
}

// Passthrough is one front's passthrough. Create it with New; it is safe
// for concurrent use once Attach has run.
type Passthrough struct {
	relay *relay
	// catalog serves prompts, resources and completion (nil without
	// Deps.Catalogs).
	catalog *catalogFront
	pager   *pager // nil: lists in one page
	started <-chan struct{}
}

// New builds the passthrough. Nothing is served until its options, hooks
// and middleware are in an mcp-go server and Attach has run.
func New(deps Deps, opts Options) *Passthrough {
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if opts.Prefix == nil {
		opts.Prefix = func(server string) string { return server + config.PrefixSeparator }
	}
	if opts.Started == nil {
		done := make(chan struct{})
		close(done)
		opts.Started = done
	}
	p := &Passthrough{relay: newRelay(deps.Relayer, log), started: opts.Started}
	if deps.Catalogs != nil {
		p.catalog = newCatalogFront(deps.Catalogs, nil, log, opts.Prefix)
		p.catalog.settle = opts.Settle
		p.catalog.peer = func(ctx context.Context) upstream.Peer { return p.relay.peer(ctx) }
	}
	if opts.ListPageSize > 0 {
		p.pager = &pager{size: opts.ListPageSize}
	}
	return p
}

// ServerOptions are the mcp-go options serving prompts, resources and
// completion need (none without Deps.Catalogs). Logging is the front's
// own option (mcpserver.WithLogging).
func (p *Passthrough) ServerOptions() []mcpserver.ServerOption {
	if p.catalog == nil {
		return nil
	}
	return p.catalog.options()
}

// Middleware is the relay's tool middleware: it keeps the client's call in
// the context for Peer and runs a stateless client's call through multi
// round-trip. Put it outside every middleware that may call an upstream.
func (p *Passthrough) Middleware(next mcpserver.ToolHandlerFunc) mcpserver.ToolHandlerFunc {
	return p.relay.middleware(next)
}

// Hook registers the passthrough on the server's hooks: the relay's
// (logging/setLevel, sessions coming and going), then the catalog's
// (initialize's capabilities and instructions, subscriptions), and last the
// pager, which cuts pages from what the client may see. Register it after
// every other hook that removes list items.
func (p *Passthrough) Hook(h *mcpserver.Hooks) {
	p.relay.hooks(h)
	if p.catalog != nil {
		p.catalog.hook(h, p.started)
	}
	if p.pager != nil {
		p.pager.hook(h)
	}
}

// Attach hands the passthrough the server it serves through, once built:
// the relay and the catalog send and register through it, and a client's
// notifications/roots/list_changed goes to the upstreams.
func (p *Passthrough) Attach(m *mcpserver.MCPServer) {
	p.relay.mcp = m
	if p.catalog != nil {
		p.catalog.mcp = m
	}
	m.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, p.relay.rootsChanged)
}

// Peer is the upstream.Peer of the tool call in ctx, to go in the upstream
// call's context (upstream.WithPeer): the client's progress token, its
// session, its capabilities and, for a stateless client, the parked call.
// nil when ctx holds no client call (Middleware did not run).
func (p *Passthrough) Peer(ctx context.Context) upstream.Peer {
	return p.relay.callPeer(ctx)
}

// ToolResult is a tool result of server as the client must see it: the
// resource URIs its links and embedded resources name are remembered (a
// client may read one that no list names) and rewritten where they would
// lead to another server. res itself is never modified.
func (p *Passthrough) ToolResult(server string, res *mcp.CallToolResult) *mcp.CallToolResult {
	if p.catalog == nil || res == nil {
		return res
	}
	p.catalog.noteLinks(server, res)
	return p.catalog.exposeLinks(server, res)
}

// Resync reloads every server's prompts, resources and templates from the
// upstreams (Catalogs.Catalogs).
func (p *Passthrough) Resync() {
	if p.catalog != nil {
		p.catalog.resync()
	}
}

// CatalogChanged records a server's new prompts, resources and templates
// (nil when it went down) and updates what the front exposes, sending
// list_changed to clients where something changed. It matches the upstream
// manager's OnCatalogChanged callback. Without Deps.Catalogs it does
// nothing.
func (p *Passthrough) CatalogChanged(server string, c *upstream.Catalog) {
	if p.catalog != nil {
		p.catalog.changed(server, c)
	}
}

// ResourceUpdated relays an upstream's notifications/resources/updated to
// the client sessions subscribed to uri. It matches the upstream manager's
// OnResourceUpdated callback.
func (p *Passthrough) ResourceUpdated(server, uri string) {
	if p.catalog != nil {
		p.catalog.resourceUpdated(server, uri)
	}
}

// ServerLog relays a log message that no call can be credited with (an
// upstream's, or the front's own) to every client session, each at its own
// level, and to the stateless requests being answered. It matches
// upstream.Options.OnLog.
func (p *Passthrough) ServerLog(server string, n mcp.LoggingMessageNotification) {
	p.relay.serverLog(server, n)
}

// Answering is how many stateless (2026-07-28) client requests are being
// answered now; each gets the server-wide log messages on its stream.
func (p *Passthrough) Answering() int {
	p.relay.mu.Lock()
	defer p.relay.mu.Unlock()
	return len(p.relay.rounds)
}

// Exposed is one thing the front offers a client, under the name the client
// sees: a tool (its direct-mode name, or in retrieve mode the id call_tool
// takes), a prompt (with its server's prefix), a resource URI or a resource
// template.
type Exposed struct {
	Server string
	// Name is what the client uses: tool name or id, prompt name, resource
	// URI or URI template.
	Name string
	// Template marks a resource template among resources.
	Template    bool
	Description string
}

// Prompts lists the exposed prompts, sorted by server then name. Names
// withheld for a collision are not listed.
func (p *Passthrough) Prompts() []Exposed {
	return p.exposed(func(c *catalogFront) (out []Exposed) {
		for name, r := range c.prompts {
			out = append(out, Exposed{Server: r.server, Name: name, Description: c.promptDescription(r)})
		}
		return out
	})
}

// Resources lists the exposed resources and resource templates, sorted by
// server then name. URIs withheld for a collision are not listed.
func (p *Passthrough) Resources() []Exposed {
	return p.exposed(func(c *catalogFront) (out []Exposed) {
		for uri, server := range c.uris {
			out = append(out, Exposed{Server: server, Name: uri, Description: c.resourceDescription(server, uri)})
		}
		for _, t := range c.tmpls {
			out = append(out, Exposed{Server: t.server, Name: templateKey(t.tmpl), Template: true, Description: t.tmpl.Description})
		}
		return out
	})
}

// exposed is what list finds in the catalog, under its read lock, sorted;
// nil without Deps.Catalogs.
func (p *Passthrough) exposed(list func(c *catalogFront) []Exposed) []Exposed {
	c := p.catalog
	if c == nil {
		return nil
	}
	c.mu.RLock()
	out := list(c)
	c.mu.RUnlock()
	SortExposed(out)
	return out
}

// SortExposed sorts items by server, then name.
func SortExposed(items []Exposed) {
	slices.SortFunc(items, func(a, b Exposed) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Name, b.Name))
	})
}

// promptDescription is the upstream's description of a prompt. c.mu must
// be held.
func (c *catalogFront) promptDescription(r promptRoute) string {
	if cat := c.catalogs[r.server]; cat != nil {
		for _, p := range cat.Prompts {
			if p.Name == r.name {
				return p.Description
			}
		}
	}
	return ""
}

// resourceDescription is the upstream's description (or name) of a
// resource. c.mu must be held.
func (c *catalogFront) resourceDescription(server, uri string) string {
	if s, orig, ok := splitRewritten(uri); ok && s == server {
		uri = orig
	}
	if cat := c.catalogs[server]; cat != nil {
		for _, r := range cat.Resources {
			if r.URI == uri {
				return cmp.Or(r.Description, r.Name)
			}
		}
	}
	return ""
}
