// Package catalog owns the tool state mcproxy serves (issue 28): for every
// upstream server that is up, the tools as it listed them, the tools held
// for the user's review with their reasons, and the tools that may run. It
// publishes that state as immutable, versioned Snapshots: the upstream
// manager publishes each server's listing (Update), the catalog folds it
// into the next snapshot on its own goroutine, after the Reviewer (the
// integrity guard) has judged it, and every subscriber (the MCP front's
// index, maps, direct mode and warm file) gets the snapshots in order on a
// goroutine of its own. A slow subscriber skips to the latest snapshot; it
// never sees a torn one, since a snapshot is never modified once published.
//
// It does no I/O of its own and knows neither the upstreams nor the front;
// the Reviewer's disk work runs on the catalog's goroutine, never on the
// publisher's (the upstream supervisor's).
package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// Reviewer judges a server's listing before it is served (the integrity
// guard, issue 16).
type Reviewer interface {
	// Review returns, by tool name, why each held tool of server's listing
	// is held; nil or empty holds nothing. allowed names the tools the
	// current snapshot lets run on server (sorted), so a reviewer that
	// cannot decide can hold only what is new. It runs on the catalog's
	// goroutine, never concurrently with itself, and must not modify listed.
	Review(server string, listed []mcp.Tool, allowed []string) map[string][]string
	// Changed receives a value when a review may now answer differently
	// (the approvals file changed); the catalog then reviews every server
	// again. A nil channel never does.
	Changed() <-chan struct{}
}

// Options tune a Catalog. The zero value is ready to use.
type Options struct {
	// Reviewer judges each listing; nil lets every listed tool run.
	Reviewer Reviewer
	// Logger receives panics of the Reviewer and of subscribers. nil = no
	// logging.
	Logger *zap.Logger
}

// Server is one server's entry in a Snapshot. It is shared by every
// snapshot that holds it: read it, never modify it.
type Server struct {
	Name string
	// Listed is the server's tools as it listed them (after its
	// allowed_tools/disabled_tools filters), sorted by name, schemas
	// verbatim.
	Listed []mcp.Tool
	// Tools is Listed without the held tools, in the proxy's plain form,
	// sorted by ID: what is served. Never nil.
	Tools []config.Tool
	// Held is why each held tool is held, by name; nil when none is.
	Held map[string][]string
}

// Snapshot is the catalog at one version. It is immutable, and safe to
// share between goroutines.
type Snapshot struct {
	// Version counts the snapshots published before this one: 0 is the
	// empty catalog, each change adds one.
	Version uint64
	servers map[string]*Server
}

var empty = &Snapshot{servers: map[string]*Server{}}

// Server returns server's entry; ok is false when the server is not up.
func (s *Snapshot) Server(name string) (*Server, bool) {
	e, ok := s.servers[name]
	return e, ok
}

// Servers names the servers that are up, sorted.
func (s *Snapshot) Servers() []string { return slices.Sorted(maps.Keys(s.servers)) }

// ServerTools is the tools server serves (held ones left out) in the
// snapshot, nil when it is not up, an empty slice when it is up with none.
// The slice is the caller's to keep.
func (s *Snapshot) ServerTools(server string) []config.Tool {
	e, ok := s.servers[server]
	if !ok {
		return nil
	}
	return slices.Clone(e.Tools)
}

// Tools is every tool served, held ones left out, sorted by ID. The slice
// is the caller's to keep.
func (s *Snapshot) Tools() []config.Tool {
	var out []config.Tool
	for _, name := range s.Servers() {
		out = append(out, s.servers[name].Tools...)
	}
	return out
}

// Allowed reports whether server:tool is served (listed and not held).
func (s *Snapshot) Allowed(server, tool string) bool {
	e, ok := s.servers[server]
	if !ok {
		return false
	}
	_, found := slices.BinarySearchFunc(e.Tools, tool, func(t config.Tool, n string) int { return strings.Compare(t.Name, n) })
	return found && e.Held[tool] == nil
}

// Definition is the server's own definition of a served tool, its schemas
// copied so the caller may keep and modify it; ok is false when the tool is
// not served.
func (s *Snapshot) Definition(server, tool string) (mcp.Tool, bool) {
	if !s.Allowed(server, tool) {
		return mcp.Tool{}, false
	}
	return FindTool(s.servers[server].Listed, tool)
}

// FindTool finds the tool called name in tools, which are sorted by name,
// and returns a copy whose schemas the caller may keep and modify.
func FindTool(tools []mcp.Tool, name string) (mcp.Tool, bool) {
	i, found := slices.BinarySearchFunc(tools, name, func(t mcp.Tool, n string) int { return strings.Compare(t.Name, n) })
	if !found {
		return mcp.Tool{}, false
	}
	return cloneSchemas(tools[i]), true
}

// cloneSchemas returns t with its raw schemas copied.
func cloneSchemas(t mcp.Tool) mcp.Tool {
	t.RawInputSchema = bytes.Clone(t.RawInputSchema)
	t.RawOutputSchema = bytes.Clone(t.RawOutputSchema)
	return t
}

// Held is why server:tool is held (a copy), nil when it is not.
func (s *Snapshot) Held(server, tool string) []string {
	if e, ok := s.servers[server]; ok {
		return slices.Clone(e.Held[tool])
	}
	return nil
}

// HeldIDs lists the held tools as server:tool ids, sorted.
func (s *Snapshot) HeldIDs() []string {
	var ids []string
	for name, e := range s.servers {
		for tool := range e.Held {
			ids = append(ids, config.ToolID(name, tool))
		}
	}
	slices.Sort(ids)
	return ids
}

// Changed names the servers whose served tools differ between prev and s
// (one of them up and not the other, or other tools), sorted.
func (s *Snapshot) Changed(prev *Snapshot) []string {
	var out []string
	for name, e := range s.servers {
		p, ok := prev.servers[name]
		if !ok || !reflect.DeepEqual(p.Tools, e.Tools) {
			out = append(out, name)
		}
	}
	for name := range prev.servers {
		if _, ok := s.servers[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// PlainTool converts a server's tool into the proxy's plain form. Schema is
// the tool's inputSchema exactly as the server sent it (RawInputSchema,
// copied) when it is kept raw; otherwise t.InputSchema encoded, or nil when
// t has none.
func PlainTool(server string, t mcp.Tool) config.Tool {
	var schema json.RawMessage
	if len(t.RawInputSchema) > 0 {
		schema = bytes.Clone(t.RawInputSchema)
	} else if t.InputSchema.Type != "" {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			schema = b
		}
	}
	return config.Tool{
		ID:          config.ToolID(server, t.Name),
		Server:      server,
		Name:        t.Name,
		Description: t.Description,
		Schema:      schema,
	}
}

// listing is a server's listing not yet folded into a snapshot; nil tools
// means the server went down.
type listing struct{ tools []mcp.Tool }

// Catalog owns the served tool state. Create it with New and Close it
// after its publishers have stopped. Its methods are safe for concurrent
// use.
type Catalog struct {
	opts Options
	log  *zap.Logger

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wake   chan struct{} // an Update is pending (capacity 1)

	mu       sync.Mutex
	pending  map[string]listing // the latest unfolded listing per server
	queued   uint64             // Updates accepted
	folded   uint64             // Updates folded into cur
	cur      *Snapshot
	subs     []*subscriber
	progress chan struct{} // closed and replaced when folded or a delivery advances
	closed   bool
	dones    []<-chan struct{} // the worker's and each subscriber's
}

// New starts a catalog; it holds no server until the first Update.
func New(opts Options) *Catalog {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Catalog{opts: opts, log: log, wake: make(chan struct{}, 1),
		pending: map[string]listing{}, cur: empty, progress: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	var changed <-chan struct{}
	if opts.Reviewer != nil {
		changed = opts.Reviewer.Changed()
	}
	c.dones = append(c.dones, goroutine.Go(log, "catalog", func() { c.run(changed) }))
	return c
}

// Update publishes server's tools as it listed them (nil: the server went
// down). It never blocks on the review or on subscribers: the listing is
// folded into the next snapshot on the catalog's goroutine, and a newer
// Update for the same server before then replaces it. tools is not
// modified and not kept beyond the copy made here. After Close it does
// nothing.
func (c *Catalog) Update(server string, tools []mcp.Tool) {
	var l listing
	if tools != nil {
		l.tools = slices.Clone(tools)
		for i := range l.tools {
			l.tools[i] = cloneSchemas(l.tools[i])
		}
		slices.SortStableFunc(l.tools, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.pending[server] = l
	c.queued++
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Snapshot is the latest snapshot published.
func (c *Catalog) Snapshot() *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// Subscribe calls fn, on a goroutine of its own named after name, with
// each snapshot published from now on, and first with the current one when
// it is not empty; prev is the snapshot fn was called with before (the
// empty catalog, version 0, the first time). Calls are in version order and
// never concurrent; while fn runs, newer snapshots replace each other, so
// the next call gets the latest. A panic in fn is logged and the next
// snapshot is still delivered. It ends at Close, or when the returned
// cancel is called (which waits for a call of fn in progress, so fn must
// not call it); after Close it does nothing.
func (c *Catalog) Subscribe(name string, fn func(prev, next *Snapshot)) (cancel func()) {
	sub := &subscriber{name: name, fn: fn, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return func() {}
	}
	c.subs = append(c.subs, sub)
	if c.cur.Version > 0 {
		sub.wake <- struct{}{}
	}
	done := goroutine.Go(c.log, "catalog subscriber "+name, func() { c.deliver(sub) })
	c.dones = append(c.dones, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.subs = slices.DeleteFunc(c.subs, func(s *subscriber) bool { return s == sub })
			// Settle no longer waits for it.
			c.advanceLocked()
			c.mu.Unlock()
			close(sub.stop)
			<-done
		})
	}
}

// Settle waits until every Update made before the call is in a snapshot
// and every subscriber has been called with that snapshot or a later one,
// or until ctx ends (returning ctx.Err()). After Close it returns at once.
func (c *Catalog) Settle(ctx context.Context) error {
	c.mu.Lock()
	target := c.queued
	for !c.closed {
		if c.folded >= target && c.deliveredLocked(c.cur.Version) {
			break
		}
		ch := c.progress
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return nil
}

// deliveredLocked reports whether every subscriber has had version v or a
// later one. c.mu must be held.
func (c *Catalog) deliveredLocked(v uint64) bool {
	for _, sub := range c.subs {
		if sub.delivered < v {
			return false
		}
	}
	return true
}

// Close stops the catalog's goroutine and its subscribers' (a call in
// progress is let finish) and returns once they have. Updates after it are
// dropped. It is safe to call more than once.
func (c *Catalog) Close() {
	c.mu.Lock()
	c.closed = true
	close(c.progress)
	c.progress = make(chan struct{})
	dones := c.dones
	c.mu.Unlock()
	c.cancel()
	for _, d := range dones {
		<-d
	}
}

// advanceLocked wakes whoever waits for progress. c.mu must be held.
func (c *Catalog) advanceLocked() {
	close(c.progress)
	c.progress = make(chan struct{})
}

// run folds pending listings into snapshots until Close.
func (c *Catalog) run(changed <-chan struct{}) {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
			c.fold(false)
		case <-changed:
			c.fold(true)
		}
	}
}

// fold builds the next snapshot from the pending listings and, when
// recheck is set, a new review of every other server, and publishes it if
// anything changed. A panic (of the Reviewer) is logged and leaves the
// snapshot as it was; the listings it dropped count as folded, so Settle
// does not wait for them forever.
func (c *Catalog) fold(recheck bool) {
	c.mu.Lock()
	pending, upTo, prev := c.pending, c.queued, c.cur
	c.pending = map[string]listing{}
	c.mu.Unlock()
	next := prev
	defer func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if next != prev {
			c.cur = next
			for _, sub := range c.subs {
				select {
				case sub.wake <- struct{}{}:
				default:
				}
			}
		}
		c.folded = max(c.folded, upTo)
		c.advanceLocked()
	}()
	defer goroutine.Recover(c.log, "catalog review", nil)

	servers := maps.Clone(prev.servers)
	changes := false
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		l := pending[name]
		old, up := servers[name]
		if l.tools == nil {
			if up {
				delete(servers, name)
				changes = true
			}
			continue
		}
		if e := c.entry(name, l.tools, old); !same(e, old) {
			servers[name] = e
			changes = true
		}
	}
	if recheck {
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			if _, done := pending[name]; done {
				continue
			}
			old := servers[name]
			if e := c.entry(name, old.Listed, old); !same(e, old) {
				servers[name] = e
				changes = true
			}
		}
	}
	if changes {
		next = &Snapshot{Version: prev.Version + 1, servers: servers}
	}
}

// entry reviews listed and builds server's entry; old is the current one
// (nil when the server was not up).
func (c *Catalog) entry(server string, listed []mcp.Tool, old *Server) *Server {
	var held map[string][]string
	if c.opts.Reviewer != nil {
		var allowed []string
		if old != nil {
			allowed = make([]string, 0, len(old.Tools))
			for _, t := range old.Tools {
				allowed = append(allowed, t.Name)
			}
		}
		held = c.opts.Reviewer.Review(server, listed, allowed)
	}
	e := &Server{Name: server, Listed: listed, Tools: make([]config.Tool, 0, len(listed))}
	for _, t := range listed {
		if r := held[t.Name]; r != nil {
			if e.Held == nil {
				e.Held = map[string][]string{}
			}
			e.Held[t.Name] = slices.Clone(r)
			continue
		}
		e.Tools = append(e.Tools, PlainTool(server, t))
	}
	slices.SortFunc(e.Tools, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })
	return e
}

// same reports whether two entries hold the same state.
func same(a, b *Server) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

// subscriber is one Subscribe.
type subscriber struct {
	name      string
	fn        func(prev, next *Snapshot)
	wake      chan struct{} // a newer snapshot may be out (capacity 1)
	stop      chan struct{} // closed by the subscription's cancel
	delivered uint64        // the version fn was last called with (guarded by Catalog.mu)
}

// deliver calls sub.fn with each newer snapshot until Close.
func (c *Catalog) deliver(sub *subscriber) {
	last := empty
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-sub.stop:
			return
		case <-sub.wake:
		}
		next := c.Snapshot()
		if next.Version <= last.Version {
			continue
		}
		func() {
			defer goroutine.Recover(c.log, "catalog subscriber "+sub.name, nil)
			sub.fn(last, next)
		}()
		last = next
		c.mu.Lock()
		sub.delivered = next.Version
		c.advanceLocked()
		c.mu.Unlock()
	}
}
