package integrity

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Options tune a Guard.
type Options struct {
	// Quarantine reports whether a server's tools seen for the first time
	// are held for approval (config.Config.Quarantined). nil = never.
	Quarantine func(server string) bool
	// OnToolsChanged receives each server's tool set with the held tools
	// taken out: when the upstream reports a change, and when an approval
	// (or a revoked one) changes what is held. Calls are never concurrent.
	// nil = no callback.
	OnToolsChanged func(server string, tools []config.Tool)
	// Logger receives held tools and store failures. nil = no logging.
	Logger *zap.Logger
	// Poll is how often the approvals file is checked for changes made by
	// `mcproxy tools approve`. Zero = DefaultPoll.
	Poll time.Duration
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// DefaultPoll is how often a running proxy looks at the approvals file.
const DefaultPoll = time.Second

// Guard sits between the upstream manager and the MCP front: it offers the
// same catalog and calls with held tools taken out, and it is the
// manager's OnToolsChanged (ToolsChanged). Its methods are safe for
// concurrent use.
type Guard struct {
	up    *upstream.Manager
	store *Store
	opts  Options
	log   *zap.Logger

	// order serializes reviews and the OnToolsChanged calls they make, so
	// a tool set computed from older tools never overtakes a newer one.
	order sync.Mutex
	last  map[string][]config.Tool // the upstream's latest set per server (guarded by order)
	sent  map[string][]string      // the names last passed on per server (guarded by order)
	seen  stamp                    // the approvals file as last loaded (guarded by order)

	mu   sync.Mutex
	held map[string]map[string][]string // server -> tool -> reasons
}

// New builds a Guard over up that keeps its approvals in store.
func New(up *upstream.Manager, store *Store, opts Options) *Guard {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Guard{up: up, store: store, opts: opts, log: opts.Logger,
		last: map[string][]config.Tool{}, sent: map[string][]string{}, held: map[string]map[string][]string{}}
}

// ToolsChanged takes a server's new tool set from the upstream manager (nil
// when it went down), reviews it and passes the tools that may run on.
func (g *Guard) ToolsChanged(server string, tools []config.Tool) {
	g.order.Lock()
	defer g.order.Unlock()
	g.last[server] = tools
	held := g.reviewAll(server, tools)
	g.seen = g.store.stamp() // what the review wrote is not news to poll
	g.apply(server, tools, held)
}

// reviewAll reviews tools against the store (or, when the store cannot be
// used, against what this process knows, so a change is still held) and
// returns the held tools' reasons. Called with order held.
func (g *Guard) reviewAll(server string, tools []config.Tool) map[string][]string {
	if tools == nil {
		return nil
	}
	defs := make([]Definition, 0, len(tools))
	for _, t := range tools {
		mt, ok := g.up.MCPTool(server, t.Name)
		if !ok { // gone again since the manager reported it; judge what we were given
			mt = mcp.Tool{Name: t.Name, Description: t.Description, RawInputSchema: t.Schema}
		}
		defs = append(defs, DefinitionOf(mt))
	}
	quarantine := g.opts.Quarantine != nil && g.opts.Quarantine(server)
	var held map[string][]string
	_, err := g.store.Update(func(a *Approvals) (bool, error) {
		var changed bool
		held, changed = a.review(server, defs, quarantine, g.opts.Now())
		return changed, nil
	})
	if err != nil {
		// Fail closed on what changed within this run: hold every tool
		// this process has not already let through.
		g.log.Error("tool approvals unavailable; holding tools of this server that were not already approved in this run",
			zap.String("upstream", server), zap.Error(err))
		held = map[string][]string{}
		g.mu.Lock()
		prev := g.held[server]
		g.mu.Unlock()
		for _, d := range defs {
			if !slices.Contains(g.sent[server], d.Name) || prev[d.Name] != nil {
				held[d.Name] = []string{"the tool approvals file cannot be used (" + err.Error() + ")"}
			}
		}
	}
	return held
}

// setHeld records server's held tools and returns those held before.
func (g *Guard) setHeld(server string, held map[string][]string) map[string][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	before := g.held[server]
	if len(held) == 0 {
		delete(g.held, server)
	} else {
		g.held[server] = held
	}
	return before
}

// apply records held and passes the rest of tools on. Called with order
// held.
func (g *Guard) apply(server string, tools []config.Tool, held map[string][]string) {
	before := g.setHeld(server, held)
	for _, name := range slices.Sorted(maps.Keys(held)) {
		if reasons := held[name]; before[name] == nil {
			g.log.Warn("tool held for review; `mcproxy tools diff` shows it, `mcproxy tools approve` releases it",
				zap.String("upstream", server), zap.String("tool", name), zap.Strings("reasons", reasons))
		}
	}
	var allowed []config.Tool
	var names []string
	if tools != nil {
		allowed = make([]config.Tool, 0, len(tools))
		names = make([]string, 0, len(tools))
	}
	for _, t := range tools {
		if held[t.Name] == nil {
			allowed = append(allowed, t)
			names = append(names, t.Name)
		}
	}
	g.sent[server] = names
	if g.opts.OnToolsChanged != nil {
		g.opts.OnToolsChanged(server, allowed)
	}
}

// Run polls the approvals file until ctx ends; when it changed (an approval
// from `mcproxy tools approve`), every server's tools are reviewed again and
// those whose allowed set changed are passed on. It owns its goroutine's
// whole life: call it on a goroutine and cancel ctx to stop it.
func (g *Guard) Run(ctx context.Context) {
	t := time.NewTicker(g.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.poll()
		}
	}
}

// poll re-reviews every server when the approvals file changed.
func (g *Guard) poll() {
	defer goroutine.Recover(g.log, "tool approvals poll", nil)
	g.order.Lock()
	defer g.order.Unlock()
	st := g.store.stamp()
	if st == g.seen {
		return
	}
	g.seen = st
	servers := make([]string, 0, len(g.last))
	for s := range g.last {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	for _, server := range servers {
		tools := g.last[server]
		if tools == nil {
			continue
		}
		held := g.reviewAll(server, tools)
		var names []string
		for _, t := range tools {
			if held[t.Name] == nil {
				names = append(names, t.Name)
			}
		}
		g.seen = g.store.stamp() // the review may have written the file itself
		if slices.Equal(names, g.sent[server]) {
			g.setHeld(server, held) // same tools run; reasons may differ
			continue
		}
		g.log.Info("tool approvals changed; updating the catalog", zap.String("upstream", server), zap.Int("tools", len(names)), zap.Int("held", len(held)))
		g.apply(server, tools, held)
	}
}

// Held returns a *HeldError when server:tool is held, else nil.
func (g *Guard) Held(server, tool string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.held[server][tool]; r != nil {
		return &HeldError{Server: server, Tool: tool, Reasons: slices.Clone(r)}
	}
	return nil
}

// HeldIDs lists the held tools as server:tool ids, sorted.
func (g *Guard) HeldIDs() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ids []string
	for server, tools := range g.held {
		for tool := range tools {
			ids = append(ids, config.ToolID(server, tool))
		}
	}
	slices.Sort(ids)
	return ids
}

// Tools is the upstream catalog without held tools.
func (g *Guard) Tools() []config.Tool {
	all := g.up.Tools()
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.DeleteFunc(all, func(t config.Tool) bool { return g.held[t.Server][t.Name] != nil })
}

// MCPTool is the upstream definition of a tool that is not held.
func (g *Guard) MCPTool(server, name string) (mcp.Tool, bool) {
	if g.Held(server, name) != nil {
		return mcp.Tool{}, false
	}
	return g.up.MCPTool(server, name)
}

// Call runs a tool that is not held; a held one gets a *HeldError.
func (g *Guard) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if err := g.Held(server, tool); err != nil {
		return nil, err
	}
	return g.up.Call(ctx, server, tool, args)
}

// Status is the upstream manager's.
func (g *Guard) Status() []upstream.Status { return g.up.Status() }

// SetLogLevel passes a client's logging/setLevel to every upstream (the
// front's relay finds it on the Upstreams it is given, which is the Guard).
func (g *Guard) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return g.up.SetLogLevel(ctx, level)
}

// RootsChanged passes a client's notifications/roots/list_changed to every
// upstream.
func (g *Guard) RootsChanged(ctx context.Context) { g.up.RootsChanged(ctx) }
