package passthrough

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Catalogs is what the front needs to pass on everything an upstream offers
// besides tools: prompts, resources and their subscriptions, and argument
// completion. *upstream.Manager implements it; its errors are Call's, with
// an upstream's own JSON-RPC error answer as *upstream.RPCError.
type Catalogs interface {
	// Catalogs returns every ready server's catalog, sorted by server.
	Catalogs() []*upstream.Catalog
	GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error)
	ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, server, uri string) error
	Unsubscribe(ctx context.Context, server, uri string) error
	Complete(ctx context.Context, server string, params mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// catalogFront aggregates the upstreams' prompts, resources and resource
// templates into the front's own lists (registered with mcp-go, which
// serves and paginates them and sends list_changed on every change) and
// routes each request to the server that owns the name or URI.
//
// Names: a prompt is exposed as the server's prefix plus its name
// (config.ServerConfig.NamePrefix); resource URIs and URI templates are
// exposed as the server sends them unless two servers claim one
// (urirewrite.go). When two servers claim one exposed name, the server that
// came up first keeps it; the later one's URI is rewritten under its
// server name, and a prompt (or the URI of a server with "prefix": "") is
// withheld and logged, naming both (issue #15).
type catalogFront struct {
	up     Catalogs
	mcp    *mcpserver.MCPServer
	log    *zap.Logger
	prefix func(server string) string
	// settle, when set, is how initialize waits for the upstreams
	// (Options.Settle); nil waits up to initializeWait.
	settle func(ctx context.Context) error
	// peer, when set, is the client of a request (the relay's): a
	// prompts/get, resources/read or completion/complete runs upstream
	// under that session's roots (upstream.WithPeer).
	peer func(ctx context.Context) upstream.Peer

	// syncMu serializes changed, so registrations follow reports in order.
	syncMu sync.Mutex

	mu       sync.RWMutex
	catalogs map[string]*upstream.Catalog // by server
	arrival  map[string]uint64            // when each server's catalog first came, for "first keeps it"
	seq      uint64
	prompts  map[string]promptRoute // exposed name → route
	uris     map[string]string      // exposed resource URI → server
	tmpls    []templateRoute        // sorted by arrival, then template
	// linked remembers which server returned a resource URI in a tool
	// result (resource_link or embedded resource), so a client can read a
	// URI that no list names.
	linked map[string]string
	// withheld holds the collisions already logged, so each is logged once.
	withheld map[string]bool

	// registered fingerprints what mcp-go holds, so a resync only touches
	// (and notifies) what changed. Guarded by syncMu.
	regPrompts   map[string]string
	regResources map[string]string
	regTemplates string
	// synced is closed, and replaced, each time a sync has brought mcp-go's
	// registrations in line, waking the requests held for a name no server
	// offered yet (awaitOwner). Guarded by syncMu.
	synced chan struct{}

	subs *subscriptions
	// started is closed once the upstreams had their first chance to
	// connect (Options.Started); a subscription made before waits for it,
	// so its owner is known.
	started <-chan struct{}
}

type promptRoute struct{ server, name string }

type templateRoute struct {
	server string
	tmpl   mcp.ResourceTemplate // as exposed
	orig   string               // the template as the server sent it
}

// catchAllTemplate is registered with mcp-go so that a resources/read of a
// URI no list names (a resource_link from a tool, a URI the client knows)
// still reaches the router instead of mcp-go's "not found". It is removed
// from every resources/templates/list answer.
const catchAllTemplate = "{+uri}"

// forClient returns ctx carrying its client's upstream.Peer, when known.
func (c *catalogFront) forClient(ctx context.Context) context.Context {
	if c.peer == nil {
		return ctx
	}
	return upstream.WithPeer(ctx, c.peer(ctx))
}

func newCatalogFront(up Catalogs, m *mcpserver.MCPServer, log *zap.Logger, prefix func(string) string) *catalogFront {
	return &catalogFront{
		up:           up,
		mcp:          m,
		log:          log,
		prefix:       prefix,
		catalogs:     map[string]*upstream.Catalog{},
		arrival:      map[string]uint64{},
		prompts:      map[string]promptRoute{},
		uris:         map[string]string{},
		linked:       map[string]string{},
		withheld:     map[string]bool{},
		regPrompts:   map[string]string{},
		regResources: map[string]string{},
		synced:       make(chan struct{}),
		subs:         newSubscriptions(),
	}
}

// catalogOptions are the mcp-go options the front needs to serve prompts,
// resources and completion. The capabilities are all on, so that mcp-go
// dispatches the methods; what initialize advertises is narrowed to the
// upstreams' union by the after-initialize hook (advertise).
func (c *catalogFront) options() []mcpserver.ServerOption {
	return []mcpserver.ServerOption{
		mcpserver.WithPromptCapabilities(true),
		mcpserver.WithResourceCapabilities(true, true),
		mcpserver.WithCompletions(),
		mcpserver.WithResourceRecovery(),
		mcpserver.WithPromptCompletionProvider(promptCompleter{c}),
		mcpserver.WithResourceCompletionProvider(resourceCompleter{c}),
	}
}

// changed records server's new catalog (nil when it went down) and brings
// the exposed prompts, resources and templates in line.
func (c *catalogFront) changed(server string, cat *upstream.Catalog) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	c.mu.Lock()
	if cat == nil {
		delete(c.catalogs, server)
		delete(c.arrival, server)
	} else {
		if _, ok := c.arrival[server]; !ok {
			c.seq++
			c.arrival[server] = c.seq
		}
		c.catalogs[server] = cat
	}
	c.mu.Unlock()
	c.sync()
}

// resync reloads every catalog from the upstreams.
func (c *catalogFront) resync() {
	got := map[string]*upstream.Catalog{}
	for _, cat := range c.up.Catalogs() {
		got[cat.Server] = cat
	}
	c.mu.RLock()
	var gone []string
	for name := range c.catalogs {
		if _, ok := got[name]; !ok {
			gone = append(gone, name)
		}
	}
	c.mu.RUnlock()
	slices.Sort(gone)
	for _, name := range gone {
		c.changed(name, nil)
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		c.changed(name, got[name])
	}
}

// order returns the servers with a catalog, first come first.
func (c *catalogFront) order() []string {
	names := make([]string, 0, len(c.catalogs))
	for name := range c.catalogs {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if x, y := c.arrival[a], c.arrival[b]; x != y {
			return cmp.Compare(x, y)
		}
		return strings.Compare(a, b)
	})
	return names
}

// withhold logs, once per collision, that a later server's name is held back.
// c.mu must be held.
func (c *catalogFront) withhold(kind, name, keeper, later string) {
	key := kind + "\x00" + name + "\x00" + later
	if c.withheld[key] {
		return
	}
	c.withheld[key] = true
	fix := fmt.Sprintf("set mcpServers.%s.prefix to expose it under another name", later)
	if kind != "prompt" {
		fix = fmt.Sprintf("with \"prefix\": \"\" its URIs are passed on exactly as sent; without that key mcproxy exposes a colliding one as %s%s/<uri>", rewrittenScheme, later)
	}
	c.log.Warn(fmt.Sprintf("%s %q of server %q collides with the one server %q exposes under the same name; %q keeps it and this one is withheld (%s)",
		kind, name, later, keeper, keeper, fix),
		zap.String("upstream", later), zap.String("kept_by", keeper))
}

// sync recomputes the exposed names and updates mcp-go's registrations.
// Callers hold syncMu.
func (c *catalogFront) sync() {
	c.mu.Lock()
	prompts := map[string]promptRoute{}
	promptDefs := map[string]mcp.Prompt{}
	uris := map[string]string{}
	resDefs := map[string]mcp.Resource{}
	var tmpls []templateRoute
	tmplOwner := map[string]string{}
	for _, server := range c.order() {
		cat := c.catalogs[server]
		pfx := c.prefix(server)
		for _, p := range cat.Prompts {
			name := pfx + p.Name
			if keeper, ok := prompts[name]; ok {
				c.withhold("prompt", name, keeper.server, server)
				continue
			}
			prompts[name] = promptRoute{server: server, name: p.Name}
			def := p
			def.Name = name
			promptDefs[name] = def
		}
		for _, r := range cat.Resources {
			uri, ok := c.claim("resource", r.URI, server, pfx, uris)
			if !ok {
				continue
			}
			uris[uri] = server
			def := r
			def.URI = uri
			resDefs[uri] = def
		}
		for _, t := range cat.Templates {
			key := templateKey(t)
			if key == "" {
				continue
			}
			exposed, ok := c.claim("resource template", key, server, pfx, tmplOwner)
			if !ok {
				continue
			}
			def, err := rewriteTemplate(t, exposed)
			if err != nil {
				c.log.Warn("a resource template rewritten for a collision does not parse; withheld", zap.String("upstream", server), zap.String("template", exposed), zap.Error(err))
				continue
			}
			tmplOwner[exposed] = server
			tmpls = append(tmpls, templateRoute{server: server, tmpl: def, orig: key})
		}
	}
	c.prompts, c.uris, c.tmpls = prompts, uris, tmpls
	c.mu.Unlock()

	c.syncPrompts(promptDefs)
	c.syncResources(resDefs)
	c.syncTemplates(tmpls)
	close(c.synced)
	c.synced = make(chan struct{})
}

func templateKey(t mcp.ResourceTemplate) string {
	if t.URITemplate == nil || t.URITemplate.Template == nil {
		return ""
	}
	return t.URITemplate.Raw()
}

func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable %p", &v)
	}
	return string(b)
}

func (c *catalogFront) syncPrompts(defs map[string]mcp.Prompt) {
	syncRegistered(c.regPrompts, defs, func(names []string) { c.mcp.DeletePrompts(names...) }, func(defs []mcp.Prompt) {
		add := make([]mcpserver.ServerPrompt, len(defs))
		for i, d := range defs {
			add[i] = mcpserver.ServerPrompt{Prompt: d, Handler: c.getPrompt}
		}
		c.mcp.AddPrompts(add...)
	})
}

func (c *catalogFront) syncResources(defs map[string]mcp.Resource) {
	syncRegistered(c.regResources, defs, func(uris []string) { c.mcp.DeleteResources(uris...) }, func(defs []mcp.Resource) {
		add := make([]mcpserver.ServerResource, len(defs))
		for i, d := range defs {
			add[i] = mcpserver.ServerResource{Resource: d, Handler: c.readListed}
		}
		c.mcp.AddResources(add...)
	})
}

// syncRegistered brings what mcp-go holds (reg: key → fingerprint) in line
// with defs, deleting and adding only what changed, in key order; mcp-go
// sends one list_changed per call.
func syncRegistered[T any](reg map[string]string, defs map[string]T, del func([]string), add func([]T)) {
	var added []T
	for _, key := range slices.Sorted(maps.Keys(defs)) {
		fp := fingerprint(defs[key])
		if reg[key] == fp {
			continue
		}
		reg[key] = fp
		added = append(added, defs[key])
	}
	var gone []string
	for key := range reg {
		if _, ok := defs[key]; !ok {
			gone = append(gone, key)
		}
	}
	for _, key := range gone {
		delete(reg, key)
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		del(gone)
	}
	if len(added) > 0 {
		add(added)
	}
}

func (c *catalogFront) syncTemplates(tmpls []templateRoute) {
	all := make([]mcpserver.ServerResourceTemplate, 0, len(tmpls)+1)
	for _, t := range tmpls {
		all = append(all, mcpserver.ServerResourceTemplate{Template: t.tmpl, Handler: c.readTemplated})
	}
	fp := fingerprint(tmpls)
	if fp == c.regTemplates {
		return
	}
	first := c.regTemplates == ""
	c.regTemplates = fp
	if first && len(tmpls) == 0 {
		// Only the catch-all; nothing a client can see changed.
		c.mcp.SetResourceTemplates(catchAll(c.readTemplated))
		return
	}
	all = append(all, catchAll(c.readTemplated))
	c.mcp.SetResourceTemplates(all...)
}

func catchAll(h mcpserver.ResourceTemplateHandlerFunc) mcpserver.ServerResourceTemplate {
	return mcpserver.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(catchAllTemplate, "mcproxy-any-resource"),
		Handler:  h,
	}
}

// hideCatchAll removes the catch-all template from a templates/list answer.
func hideCatchAll(_ context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
	if res == nil {
		return
	}
	res.ResourceTemplates = slices.DeleteFunc(slices.Clone(res.ResourceTemplates), func(t mcp.ResourceTemplate) bool {
		return templateKey(t) == catchAllTemplate
	})
}

// initializeWait bounds how long an initialize waits for the upstreams'
// first connection attempt, whose outcome decides the capabilities and
// instructions it answers with. A client keeps what initialize said for the
// whole session, and a client that launches mcproxy initializes at once,
// while its upstreams are still starting.
const initializeWait = 10 * time.Second

// advertise narrows what initialize says the front offers to what the
// upstreams offer together, and appends the upstreams' instructions, each
// under its server name. It waits (up to initializeWait) for the upstreams'
// first chance to connect; if they have not had it by then, nothing is
// known, so everything stays advertised. With Options.Settle the wait is
// the MCP front's start grace: none for the servers its warm file covers
// (the point of a warm start is a first answer within half a second), else
// until every upstream is up or has failed, at most its start grace, so a
// server that hangs at initialize does not hold the client's initialize
// either.
func (c *catalogFront) advertise(started <-chan struct{}) func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) {
	return func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if res == nil {
			return
		}
		if c.settle != nil {
			_ = c.settle(ctx)
		} else {
			wait := time.NewTimer(initializeWait)
			select {
			case <-started:
			case <-ctx.Done():
			case <-wait.C:
			}
			wait.Stop()
		}
		c.mu.RLock()
		order := c.order()
		cats := make([]*upstream.Catalog, 0, len(order))
		for _, name := range order {
			cats = append(cats, c.catalogs[name])
		}
		c.mu.RUnlock()
		slices.SortFunc(cats, func(a, b *upstream.Catalog) int { return strings.Compare(a.Server, b.Server) })
		if text := upstreamInstructions(cats); text != "" {
			res.Instructions += "\n\n" + text
		}
		select {
		case <-started:
		default:
			return
		}
		caps := unionCapabilities(cats)
		res.Capabilities.Prompts = caps.Prompts
		res.Capabilities.Resources = caps.Resources
		res.Capabilities.Completions = caps.Completions
	}
}

// unionCapabilities is what the upstreams offer together, for prompts,
// resources and completion. list_changed is on wherever the capability is:
// the front sends it whenever an upstream comes, goes or changes its lists.
func unionCapabilities(cats []*upstream.Catalog) mcp.ServerCapabilities {
	var out mcp.ServerCapabilities
	for _, cat := range cats {
		c := cat.Capabilities
		if c.Prompts != nil {
			out.Prompts = &struct {
				ListChanged bool `json:"listChanged,omitempty"`
			}{ListChanged: true}
		}
		if c.Resources != nil {
			subscribe := c.Resources.Subscribe || (out.Resources != nil && out.Resources.Subscribe)
			out.Resources = &struct {
				Subscribe   bool `json:"subscribe,omitempty"`
				ListChanged bool `json:"listChanged,omitempty"`
			}{Subscribe: subscribe, ListChanged: true}
		}
		if c.Completions != nil {
			out.Completions = &struct{}{}
		}
	}
	return out
}

// UpstreamInstructionsHeader opens the part of initialize's instructions
// that passes on the upstreams' own instructions.
const UpstreamInstructionsHeader = "Instructions from the servers behind mcproxy, each under its server name:"

// upstreamInstructions combines the upstreams' own instructions, each under
// its server name, sorted by server.
func upstreamInstructions(cats []*upstream.Catalog) string {
	var b strings.Builder
	for _, cat := range cats {
		text := strings.TrimSpace(cat.Instructions)
		if text == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(UpstreamInstructionsHeader)
		}
		fmt.Fprintf(&b, "\n\n## %s\n%s", cat.Server, text)
	}
	return b.String()
}

// hook registers what the front does around mcp-go's own handling:
// initialize's capabilities and instructions, the hidden catch-all
// template, the upstream side of subscriptions, and holding a request for a
// prompt or resource whose server is still connecting (awaitOwner).
func (c *catalogFront) hook(h *mcpserver.Hooks, started <-chan struct{}) {
	c.started = started
	h.AddAfterInitialize(c.advertise(started))
	h.AddAfterListResourceTemplates(hideCatchAll)
	h.AddOnRequestInitialization(c.subscribing)
	h.AddOnRequestInitialization(c.awaitOwner)
	h.AddAfterUnsubscribe(c.unsubscribed)
	h.AddOnUnregisterSession(c.sessionGone)
}
