package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/profile"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// profileView is one HTTP profile's MCP front (issue 31): a view over the
// stack's one set of upstreams, its one catalog and its one ranking. It
// subscribes to the catalog and keeps, of each snapshot, the tools its
// profile.Matcher includes; its tools/list, retrieve_tools (the full
// index's ranking restricted to those tools, server.Options.SharedIndex),
// describe_tool and call_tool read them, and its prompts and resources
// are its servers' alone (viewCatalogs). A tool outside it is "not found",
// with no hint that it exists (viewUpstreams). Its settings (mode, retrieve
// limit, noa) are the profile's.
type profileView struct {
	name string
	conf config.ProfileConfig // the settings it was built with
	m    atomic.Pointer[profile.Matcher]

	front *server.Server
	// mu orders the catalog's deliveries (follow) and a new matcher's
	// resync (setProfile).
	mu          sync.Mutex
	unsubscribe func()
	stop        chan struct{} // closed by close: the start wait ends
	started     <-chan struct{}
}

// matcher is the view's current profile.Matcher.
func (v *profileView) matcher() *profile.Matcher { return v.m.Load() }

// newView builds the view of profile name (pc) over st and subscribes it
// to st's catalog. Its tool calls wait for st's front to have started.
func (st *stack) newView(name string, pc config.ProfileConfig, log *zap.Logger) (*profileView, error) {
	cfg := st.cfg
	arm, err := arms.Resolve(cfg.Arm)
	if err != nil {
		return nil, &config.FieldError{Path: "arm", Message: err.Error()}
	}
	v := &profileView{name: name, conf: pc, stop: make(chan struct{})}
	v.m.Store(profile.New(name, pc))
	sessions := st.opts.Sessions
	if pc.Noa != nil && !*pc.Noa {
		sessions = nil
	}
	limit := cfg.RetrieveLimit
	if pc.RetrieveLimit != 0 {
		limit = pc.RetrieveLimit
	}
	f, err := server.New(server.Deps{
		Upstreams: &viewUpstreams{g: st.guard, cat: st.cat, m: v.matcher},
		Index:     st.rank,
		Logger:    log.Named("server"),
		Sessions:  sessions,
		Learner:   st.learn,
		Catalogs:  &viewCatalogs{mgr: st.mgr, m: v.matcher},
		OnCall:    st.opts.OnCall,
	}, server.Options{
		Version:       st.opts.Version,
		Mode:          cmp.Or(pc.Mode, cfg.Mode),
		RetrieveLimit: limit,
		ListPageSize:  cfg.ListPageSize,
		Render:        server.ArmRenderer(arm.EncodeListing),
		IndexMetadata: arms.BaselineMetadata,
		WaitForStart:  true,
		Launched:      st.mgr.Launched(),
		ConfigNotice:  st.opts.ConfigNotice,
		SharedIndex:   true,
		Prefix: func(name string) string {
			return cfg.MCPServers[name].NamePrefix(name)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	v.front = f
	st.fronts.add(v)
	v.unsubscribe = st.cat.Subscribe("profile "+name, v.follow)
	// What is up already: prompts and resources (tools come with the
	// subscription's first snapshot too; applying them twice is free).
	v.resync()
	v.started = goroutine.Go(log, "profile "+name+" start", func() {
		select {
		case <-st.front.WhenStarted():
			f.Started()
		case <-v.stop:
		}
	})
	return v, nil
}

// follow is the view's subscription to the catalog: each server of the
// profile whose served tools changed goes to the front, narrowed to the
// profile's tools.
func (v *profileView) follow(prev, next *catalog.Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := v.matcher()
	for _, name := range next.Changed(prev) {
		if m.Server(name) {
			v.front.ToolsChanged(name, viewTools(m, next, name))
		}
	}
}

// setProfile applies a changed profile (a config reload) to the view:
// tools, prompts and resources it now includes appear and those it no
// longer includes go, with list_changed to its clients.
func (v *profileView) setProfile(pc config.ProfileConfig) {
	v.mu.Lock()
	v.conf = pc
	v.m.Store(profile.New(v.name, pc))
	v.mu.Unlock()
	v.resync()
}

// resync brings the front's tools, prompts and resources up to date with
// the matcher and the latest snapshot.
func (v *profileView) resync() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.front.Resync()
}

// close ends the view's subscription (its front serves nothing after the
// caller has closed its sessions).
func (v *profileView) close() {
	v.unsubscribe()
	close(v.stop)
	<-v.started
}

// viewTools is what server serves in snap narrowed to m (nil when it is
// not up).
func viewTools(m *profile.Matcher, snap *catalog.Snapshot, server string) []config.Tool {
	e, ok := snap.Server(server)
	if !ok {
		return nil
	}
	out := make([]config.Tool, 0, len(e.Tools))
	for _, t := range e.Tools {
		if m.Tool(server, t.Name, annotations(e, t.Name)) {
			out = append(out, t)
		}
	}
	return out
}

// annotations are the annotations server e listed tool with (none when it
// did not list it).
func annotations(e *catalog.Server, tool string) mcp.ToolAnnotation {
	i, ok := slices.BinarySearchFunc(e.Listed, tool, func(t mcp.Tool, n string) int { return cmp.Compare(t.Name, n) })
	if !ok {
		return mcp.ToolAnnotation{}
	}
	return e.Listed[i].Annotations
}

// viewUpstreams is a profile view's server.Upstreams: the integrity guard
// narrowed to the profile. A tool outside it is unknown (ErrUnknownTool,
// which the front answers as "not found" with suggestions from the view
// alone), a server outside it is not reported.
type viewUpstreams struct {
	g   *integrity.Guard
	cat *catalog.Catalog
	m   func() *profile.Matcher
}

// includes reports whether the profile includes server:tool, judged on the
// annotations the server listed it with.
func (u *viewUpstreams) includes(server, tool string) bool {
	m := u.m()
	if m.Everything() {
		return true
	}
	var ann mcp.ToolAnnotation
	if e, ok := u.cat.Snapshot().Server(server); ok {
		ann = annotations(e, tool)
	}
	return m.Tool(server, tool, ann)
}

func (u *viewUpstreams) Tools() []config.Tool {
	m := u.m()
	snap := u.cat.Snapshot()
	var out []config.Tool
	for _, name := range snap.Servers() {
		if m.Server(name) {
			out = append(out, viewTools(m, snap, name)...)
		}
	}
	return out
}

func (u *viewUpstreams) MCPTool(server, name string) (mcp.Tool, bool) {
	if !u.includes(server, name) {
		return mcp.Tool{}, false
	}
	return u.g.MCPTool(server, name)
}

func (u *viewUpstreams) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	if !u.includes(server, tool) {
		return nil, fmt.Errorf("%w %q", upstream.ErrUnknownTool, config.ToolID(server, tool))
	}
	return u.g.Call(ctx, server, tool, args)
}

func (u *viewUpstreams) Status() []upstream.Status {
	m := u.m()
	return slices.DeleteFunc(u.g.Status(), func(st upstream.Status) bool { return !m.Server(st.Server) })
}

// Held and HeldIDs (server.Holder) say why a tool of the profile is held.
func (u *viewUpstreams) Held(server, tool string) error {
	if !u.includes(server, tool) {
		return nil
	}
	return u.g.Held(server, tool)
}

func (u *viewUpstreams) HeldIDs() []string {
	return slices.DeleteFunc(u.g.HeldIDs(), func(id string) bool {
		server, tool, _ := config.SplitToolID(id)
		return !u.includes(server, tool)
	})
}

// SetLogLevel and RootsChanged (passthrough.Relayer) go to the upstreams.
func (u *viewUpstreams) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return u.g.SetLogLevel(ctx, level)
}

func (u *viewUpstreams) RootsChanged(ctx context.Context) { u.g.RootsChanged(ctx) }

// viewCatalogs is a profile view's passthrough.Catalogs: the prompts,
// resources and completion of the profile's servers alone.
type viewCatalogs struct {
	mgr *upstream.Manager
	m   func() *profile.Matcher
}

// outside is the error for a server the profile does not include: unknown,
// as for a server that is not configured, naming no other.
func outside(server string) error {
	return fmt.Errorf("%w %q", upstream.ErrUnknownServer, server)
}

func (c *viewCatalogs) Catalogs() []*upstream.Catalog {
	m := c.m()
	return slices.DeleteFunc(c.mgr.Catalogs(), func(cat *upstream.Catalog) bool { return !m.Server(cat.Server) })
}

func (c *viewCatalogs) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	if !c.m().Server(server) {
		return nil, outside(server)
	}
	return c.mgr.GetPrompt(ctx, server, name, args)
}

func (c *viewCatalogs) ReadResource(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	if !c.m().Server(server) {
		return nil, outside(server)
	}
	return c.mgr.ReadResource(ctx, server, uri)
}

func (c *viewCatalogs) Subscribe(ctx context.Context, server, uri string) error {
	if !c.m().Server(server) {
		return outside(server)
	}
	return c.mgr.Subscribe(ctx, server, uri)
}

func (c *viewCatalogs) Unsubscribe(ctx context.Context, server, uri string) error {
	if !c.m().Server(server) {
		return outside(server)
	}
	return c.mgr.Unsubscribe(ctx, server, uri)
}

func (c *viewCatalogs) Complete(ctx context.Context, server string, params mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if !c.m().Server(server) {
		return nil, outside(server)
	}
	return c.mgr.Complete(ctx, server, params)
}

// frontSet holds the fronts the upstream manager's prompt, resource and
// log callbacks reach: the default front with every server's, and each
// profile's view with its servers'.
type frontSet struct {
	mu    sync.RWMutex
	main  *server.Server
	views []*profileView
}

func (fs *frontSet) setMain(f *server.Server) {
	fs.mu.Lock()
	fs.main = f
	fs.mu.Unlock()
}

func (fs *frontSet) add(v *profileView) {
	fs.mu.Lock()
	fs.views = append(fs.views, v)
	fs.mu.Unlock()
}

func (fs *frontSet) remove(v *profileView) {
	fs.mu.Lock()
	fs.views = slices.DeleteFunc(fs.views, func(o *profileView) bool { return o == v })
	fs.mu.Unlock()
}

// each calls fn with every front that includes upstream's prompts,
// resources and logs.
func (fs *frontSet) each(upstream string, fn func(*server.Server)) {
	fs.mu.RLock()
	main, views := fs.main, slices.Clone(fs.views)
	fs.mu.RUnlock()
	if main != nil {
		fn(main)
	}
	for _, v := range views {
		if v.matcher().Server(upstream) {
			fn(v.front)
		}
	}
}

// fronts is every front: the default one, then each profile's view.
func (fs *frontSet) fronts() []*server.Server {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	out := []*server.Server{fs.main}
	for _, v := range fs.views {
		out = append(out, v.front)
	}
	return out
}
