package integrity

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Options tune a Reviewer.
type Options struct {
	// Quarantine reports whether a server's tools seen for the first time
	// are held for approval (config.Config.Quarantined). nil = never.
	Quarantine func(server string) bool
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

// Reviewer is the catalog's catalog.Reviewer: it judges each server's
// listing against the approvals in its Store, and its poll (Run) tells the
// catalog when the approvals file changed, so an approval takes effect in a
// running proxy. Its methods are safe for concurrent use.
type Reviewer struct {
	store   *Store
	opts    Options
	log     *zap.Logger
	changed chan struct{} // the approvals file changed (capacity 1)

	// mu orders reviews against the poll's look at the file, so what a
	// review wrote is not news to the poll.
	mu     sync.Mutex
	seen   string                     // the approvals' stamp as last loaded or written
	logged map[string]map[string]bool // held tools already logged, by server
}

// NewReviewer builds a Reviewer that keeps its approvals in store.
func NewReviewer(store *Store, opts Options) *Reviewer {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reviewer{store: store, opts: opts, log: opts.Logger,
		changed: make(chan struct{}, 1), logged: map[string]map[string]bool{}}
}

// Changed receives a value when the approvals file changed (catalog.Reviewer).
func (r *Reviewer) Changed() <-chan struct{} { return r.changed }

// Review reviews server's listed tools against the store (or, when the
// store cannot be used, against allowed, what runs already, so a change is
// still held) and returns the held tools' reasons (catalog.Reviewer).
func (r *Reviewer) Review(server string, listed []mcp.Tool, allowed []string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	defs := make([]Definition, 0, len(listed))
	for _, t := range listed {
		defs = append(defs, DefinitionOf(t))
	}
	quarantine := r.opts.Quarantine != nil && r.opts.Quarantine(server)
	var held map[string][]string
	_, err := r.store.Update(func(a *Approvals) (bool, error) {
		var changed bool
		held, changed = a.review(server, defs, quarantine, r.opts.Now())
		return changed, nil
	})
	r.seen = r.store.stamp() // what the review wrote is not news to poll
	if err != nil {
		// Fail closed on what changed within this run: hold every tool
		// this process has not already let through.
		r.log.Error("tool approvals unavailable; holding tools of this server that were not already approved in this run",
			zap.String("upstream", server), zap.Error(err))
		held = map[string][]string{}
		for _, d := range defs {
			if !slices.Contains(allowed, d.Name) {
				held[d.Name] = []string{"the tool approvals file cannot be used (" + err.Error() + ")"}
			}
		}
	}
	r.logHeld(server, held)
	return held
}

// logHeld warns once about each tool that became held. Called with mu held.
func (r *Reviewer) logHeld(server string, held map[string][]string) {
	before := r.logged[server]
	now := make(map[string]bool, len(held))
	for _, name := range slices.Sorted(maps.Keys(held)) {
		now[name] = true
		if !before[name] {
			r.log.Warn("tool held for review; `mcproxy tools diff` shows it, `mcproxy tools approve` releases it",
				zap.String("upstream", server), zap.String("tool", name), zap.Strings("reasons", held[name]))
		}
	}
	r.logged[server] = now
}

// Run polls the approvals file until ctx ends; when it changed (an approval
// from `mcproxy tools approve`), Changed receives a value and the catalog
// reviews every server again. A backend that notifies (Notifier) is looked
// at as soon as it says so too. It owns its goroutine's whole life: call it
// on a goroutine and cancel ctx to stop it.
func (r *Reviewer) Run(ctx context.Context) {
	t := time.NewTicker(r.opts.Poll)
	defer t.Stop()
	notified := r.store.changes() // nil for the file: polled only
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.poll()
		case <-notified:
			r.poll()
		}
	}
}

// poll signals Changed when the approvals file changed.
func (r *Reviewer) poll() {
	defer goroutine.Recover(r.log, "tool approvals poll", nil)
	r.mu.Lock()
	st := r.store.stamp()
	news := st != r.seen
	r.seen = st
	r.mu.Unlock()
	if !news {
		return
	}
	r.log.Info("tool approvals changed; reviewing every server's tools again")
	select {
	case r.changed <- struct{}{}:
	default: // a review of everything is due already
	}
}

// Guard sits between the upstream manager and the MCP front: it offers the
// catalog's tools, which leave the held ones out, and refuses calls of held
// tools. Its methods are safe for concurrent use.
type Guard struct {
	up  *upstream.Manager
	cat *catalog.Catalog
}

// New builds a Guard that serves cat's tools and runs them on up.
func New(up *upstream.Manager, cat *catalog.Catalog) *Guard {
	return &Guard{up: up, cat: cat}
}

// Held returns a *HeldError when server:tool is held, else nil.
func (g *Guard) Held(server, tool string) error {
	if r := g.cat.Snapshot().Held(server, tool); r != nil {
		return &HeldError{Server: server, Tool: tool, Reasons: r}
	}
	return nil
}

// HeldIDs lists the held tools as server:tool ids, sorted.
func (g *Guard) HeldIDs() []string { return g.cat.Snapshot().HeldIDs() }

// Tools is the catalog's tools, held ones left out, sorted by ID.
func (g *Guard) Tools() []config.Tool { return g.cat.Snapshot().Tools() }

// MCPTool is the upstream definition of a tool that is served (not held).
func (g *Guard) MCPTool(server, name string) (mcp.Tool, bool) {
	return g.cat.Snapshot().Definition(server, name)
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
