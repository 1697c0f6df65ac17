// Package server is mcproxy's MCP front: the mcp-go server that MCP clients
// (Claude Desktop, Claude Code, Cursor, inspector, any MCP client) reach
// through internal/mcptransport, and what it does with tools.
//
// It owns: the meta tools retrieve_tools, call_tool and describe_tool
// (meta.go, render.go, refine.go) in retrieve mode, and direct mode, which
// exposes every upstream tool under a client-safe name (direct.go); the
// front's views of the served tools, kept from the tool catalog's snapshots
// (Follow, ToolsChanged) together with the search index (syncIndex,
// indexmeta.go) and the warm start file (warm.go), and the waits of a call
// made while the upstreams start; the mapping of upstream failures to
// errors a model can act on (errors.go, held.go); noa shaping of every
// tools/call and its result, with the Compress and read_archive tools, when
// Deps.Sessions is set (noa.go); the config notice in answers (notice.go),
// learning hooks (learn.go), the release of a large call's memory
// (release.go), and reporting every call that reached an upstream to
// Deps.OnCall with its client's name (observe.go).
//
// Everything an upstream offers besides tools (prompts, resources and their
// subscriptions, completion, paging, log levels) and the relay of what an
// upstream sends during a call (progress, log messages, sampling,
// elicitation, roots, multi round-trip) is internal/passthrough's, which
// the front builds into its mcp-go server (passthrough.go says how).
//
// It reaches the upstreams and the tool ranking through the small interfaces
// it declares (Upstreams, Index), speaking their types (upstream's status
// and errors, retrieval's ranking), and runs noa through internal/session;
// cmd/mcproxy wires *upstream.Manager and *retrieval.Pipeline behind them. It
// serves no transport itself (Server.MCP and Server.Lifts are what
// internal/mcptransport serves), never decides where logs go and never
// writes to stdout on its own.
//
// Its size (about 3,450 lines, over the project's guide of 3,000 for one
// package) is one concern, answering a client's tool requests: the meta
// tools, direct mode, noa shaping and the error texts all read and keep the
// same views of the served tools (tools, byID, directIDs under one lock)
// and the same start state (Started, the warm start's grace), and run in
// one middleware chain per call. Split apart, those views and that chain
// would have to be exported between packages that only ever change
// together.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/largeargs"
	"github.com/mcproxy/mcproxy/internal/learn"
	"github.com/mcproxy/mcproxy/internal/passthrough"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Upstreams is what the front needs from the upstream manager.
type Upstreams interface {
	// Tools returns every up server's allowed tools, sorted by ID.
	Tools() []config.Tool
	// MCPTool returns the upstream's own definition of a tool.
	MCPTool(server, name string) (mcp.Tool, bool)
	// Call runs a tool. A tool-level failure is a result with IsError; a Go
	// error wraps upstream.ErrUnknownServer or upstream.ErrUnknownTool, or is
	// an *upstream.DownError, *upstream.TimeoutError or another transport or
	// protocol failure (*upstream.Manager's errors, passed through).
	Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
	// Status reports every configured server, sorted by name.
	Status() []upstream.Status
}

// Index is the search index the front keeps in sync and queries.
type Index interface {
	// Upsert replaces every document of server with tools.
	Upsert(server string, tools []config.ToolMetadata) error
	// Remove drops every document of server.
	Remove(server string) error
	// Search ranks tools for query, hits sorted by score (desc), ties by
	// ID. *retrieval.Pipeline is the production one.
	Search(ctx context.Context, query string, limit int) (retrieval.Ranking, error)
}

// Match is one ranked retrieve_tools result.
type Match struct {
	Tool  config.Tool
	Score float64
	// Weak marks an answer that shares little of the query's wording
	// (retrieval.Ranking.Weak, the same for every match of an answer);
	// retrieve_tools then also lists the servers (refine.go).
	Weak bool
	// Learned are the query words this tool matched only through words it
	// learned from use (index.Hit.Learned).
	Learned []string
}

// Renderer turns ranked matches into the text retrieve_tools returns. It must
// be deterministic and must not modify matches.
type Renderer func(matches []Match) (string, error)

// IndexMetadataFunc maps a tool to the exact fields the index ingests.
type IndexMetadataFunc func(t config.Tool) (config.ToolMetadata, error)

// Deps are the parts the front is built on.
type Deps struct {
	// Upstreams is required.
	Upstreams Upstreams
	// Index is required in retrieve mode; in direct mode nil means no index
	// is kept (unknown-tool suggestions then use edit distance only).
	Index Index
	// Logger receives operational logs; nil means no logging.
	Logger *zap.Logger
	// Sessions runs noa on every client session: each tools/call is
	// recorded and its result shaped (ref tag, nudge, size cut), and the
	// Compress and read_archive tools are exposed. With its RecallOnly set
	// (config noa.mcp "recall": the gateway compresses), only the size
	// cuts and their recall tool, read_result, are kept. nil means noa is
	// off.
	Sessions *session.Manager
	// Learner, when set, learns from each session's searches and calls in
	// retrieve mode which words lead to which tool (config "learn"); nil
	// means nothing is learned.
	Learner *learn.Learner
	// Catalogs serves the upstreams' prompts, resources and completion
	// (internal/passthrough); nil means the front offers tools only.
	Catalogs passthrough.Catalogs
	// OnCall, when set, is told of every tool call that reached the
	// upstream manager, once it is answered (observe.go: metrics, the call
	// history). It runs on the call's path and must not block. nil means
	// nothing is told.
	OnCall func(Call)
}

// Options tune the front. The zero value is retrieve mode with the interim
// renderer and plain index metadata.
type Options struct {
	// Name and Version are what the front reports in initialize; empty means
	// "mcproxy" and "dev".
	Name, Version string
	// Mode is config.ModeRetrieve (default when empty) or config.ModeDirect.
	Mode string
	// ListPageSize is how many items one page of the front's lists holds
	// (passthrough.Options.ListPageSize; config list_page_size); zero answers each list in one
	// page, which clients that ignore nextCursor need.
	ListPageSize int
	// RetrieveLimit is how many matches retrieve_tools returns without an
	// explicit limit; zero means config.DefaultRetrieveLimit.
	RetrieveLimit int
	// Render renders retrieve_tools answers; nil means InterimRenderer.
	Render Renderer
	// IndexMetadata maps tools to index documents; nil means PlainMetadata.
	IndexMetadata IndexMetadataFunc
	// WaitForStart, when true, makes tool calls (meta tools and direct-mode
	// tools) wait until Started is called, bounded by each request's
	// context. Clients can then connect and initialize while the upstreams
	// are still connecting, and their first search still sees every tool.
	// False means calls are answered from whatever the catalog holds.
	WaitForStart bool
	// WarmCatalog is the file holding every upstream's last known tool
	// list, read by WarmStart and rewritten when a list changes (warm.go);
	// "" means no warm start.
	WarmCatalog string
	// StartGrace bounds how long, before Started, retrieve_tools and
	// describe_tool wait for servers that are connecting with no last known
	// tools; zero means DefaultStartGrace.
	StartGrace time.Duration
	// Launched, closed once the upstreams are connecting, releases
	// call_tool before Started (the upstream manager then waits for the
	// target server itself); nil means call_tool waits for Started.
	Launched <-chan struct{}
	// StdioSessionID is the noa session id of the stdio connection, whose
	// mcp-go session id is the constant "stdio"; give each run its own
	// (session.NewSessionID). Unused when Deps.Sessions is nil.
	StdioSessionID string
	// ConfigNotice returns a line for the model to pass on to the user while
	// something about mcproxy's own configuration needs them (a refused
	// change to the config file: mcproxy runs the previous config), ""
	// while nothing does; notice.go says where it is shown. nil means never.
	ConfigNotice func() string
	// Prefix is what goes in front of a server's names in direct mode
	// (tools) and for prompts: config.ServerConfig.NamePrefix. nil means
	// server + "__" for every server.
	Prefix func(server string) string
	// SharedIndex marks Deps.Index as kept by another front over the same
	// catalog (the default profile's, issue 31): this front only searches
	// it, restricted to the tools it serves, and never writes it. false
	// means the front keeps the index in step with its tools.
	SharedIndex bool
}

// maxRetrieveLimit caps retrieve_tools' limit so one answer cannot flood the
// model's context.
const maxRetrieveLimit = 50

// Server is the MCP front. Create it with New; it is safe for concurrent use.
type Server struct {
	up   Upstreams
	ix   Index
	log  *zap.Logger
	opts Options
	mcp  *mcpserver.MCPServer
	// learn follows search episodes (nil: off); learnID keys them by
	// client session.
	learn   *learn.Learner
	learnID sessionIDFunc

	// syncMu serializes ToolsChanged, so index, catalog and direct-mode
	// registrations are updated in the same order.
	syncMu sync.Mutex
	// mu guards the catalog below.
	mu sync.RWMutex
	// tools is the catalog: every up server's tools, by server.
	tools map[string][]config.Tool
	// byID indexes the catalog by "server:tool".
	byID map[string]config.Tool
	// applied is, by server, how many tools the last report ToolsChanged
	// finished applying had: an upstream reports itself ready an instant
	// before its tools are indexed, and retrieve_tools says so meanwhile.
	applied map[string]int
	// directIDs maps each exposed direct-mode name to its tool id.
	directIDs map[string]string
	// direct holds the direct-mode registrations: exposed name → entry, so
	// a resync only touches what changed. Guarded by syncMu.
	direct map[string]directEntry
	// arrival numbers servers in the order their tools first came
	// (guarded by mu), for direct-mode name collisions; collided holds
	// the collisions already logged, renamed the renamings.
	arrival  map[string]uint64
	arrivals uint64
	collided map[string]bool
	renamed  map[string]bool

	// pass passes on prompts, resources, completion and paging, and relays
	// what upstreams send during a call to its client (internal/passthrough).
	pass *passthrough.Passthrough

	// warm is the warm start state (warm.go).
	warm warmCatalog

	// started is closed by Started (or at New without WaitForStart).
	started     chan struct{}
	startedOnce sync.Once

	// notices remembers who was given the config notice (direct mode).
	notices noticesShown

	// onCall is Deps.OnCall; clients names each session's client.
	onCall  func(Call)
	clients clientNames
	// lifts holds the large arguments lifted from stdio lines until their
	// calls run (internal/largeargs).
	lifts largeargs.Table
	// releasing is set while a large call's memory is released (release.go).
	releasing atomic.Bool
}

// New builds the front. It registers the meta tools (retrieve mode) but does
// not read the upstreams: subscribe Follow to the tool catalog, and call
// Resync once the upstreams are started.
func New(deps Deps, opts Options) (*Server, error) {
	if deps.Upstreams == nil {
		return nil, errors.New("server: Upstreams is required")
	}
	if opts.Mode == "" {
		opts.Mode = config.ModeRetrieve
	}
	if opts.Mode != config.ModeRetrieve && opts.Mode != config.ModeDirect {
		return nil, fmt.Errorf("server: mode %q: want %q or %q", opts.Mode, config.ModeRetrieve, config.ModeDirect)
	}
	if opts.Mode == config.ModeRetrieve && deps.Index == nil {
		return nil, errors.New("server: retrieve mode needs an Index")
	}
	if opts.Name == "" {
		opts.Name = "mcproxy"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.RetrieveLimit <= 0 {
		opts.RetrieveLimit = config.DefaultRetrieveLimit
	}
	opts.RetrieveLimit = min(opts.RetrieveLimit, maxRetrieveLimit)
	if opts.Render == nil {
		opts.Render = InterimRenderer
	}
	if opts.IndexMetadata == nil {
		opts.IndexMetadata = PlainMetadata
	}
	if opts.Prefix == nil {
		opts.Prefix = func(server string) string { return server + config.PrefixSeparator }
	}
	if opts.StartGrace <= 0 {
		opts.StartGrace = DefaultStartGrace
	}
	log := deps.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{
		up:      deps.Upstreams,
		ix:      deps.Index,
		log:     log,
		opts:    opts,
		tools:   map[string][]config.Tool{},
		byID:    map[string]config.Tool{},
		applied: map[string]int{},
		direct:  map[string]directEntry{},
		started: make(chan struct{}),
		onCall:  deps.OnCall,
		warm:    warmCatalog{path: opts.WarmCatalog, fromFile: map[string]bool{}, slow: map[string]bool{}},
	}
	if !opts.WaitForStart {
		s.Started()
	}
	// The upstreams may also apply log levels and roots changes.
	relayer, _ := deps.Upstreams.(passthrough.Relayer)
	s.pass = passthrough.New(passthrough.Deps{Catalogs: deps.Catalogs, Relayer: relayer, Logger: log},
		passthrough.Options{Prefix: opts.Prefix, ListPageSize: opts.ListPageSize, Started: s.started, Settle: s.waitSettled})
	if deps.Learner != nil {
		stdio := opts.StdioSessionID
		if stdio == "" {
			stdio = "stdio" // noa off: the connection is the one session
		}
		s.learn, s.learnID = deps.Learner, clientSessionID(stdio)
	}
	hooks := &mcpserver.Hooks{}
	// First, so every other hook and middleware sees a lifted call's
	// arguments (internal/largeargs).
	hooks.AddBeforeCallTool(s.lifts.Restore)
	if opts.Mode == config.ModeDirect {
		// In direct mode tools/list is the catalog: hold it, like tool
		// calls, until the upstreams have had their first chance to connect,
		// for clients that list once and ignore list_changed.
		hooks.AddBeforeListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest) {
			_ = s.waitStarted(ctx)
		})
		hooks.AddOnRequestInitialization(s.refuseHeldDirect)
	}
	mcpOpts := []mcpserver.ServerOption{
		mcpserver.WithToolCapabilities(true),
		// Outermost, so a panic while recording a call is caught too.
		mcpserver.WithRecovery(),
		// Next, so every other middleware sees a lifted call's arguments
		// (internal/largeargs).
		mcpserver.WithToolHandlerMiddleware(largeargs.Restore),
		// Then, so a large call's memory is released after everything
		// else it did (release.go).
		mcpserver.WithToolHandlerMiddleware(s.releaseMemory),
		mcpserver.WithHooks(hooks),
		mcpserver.WithLogging(),
		mcpserver.WithToolHandlerMiddleware(s.pass.Middleware),
	}
	s.hookClients(hooks)
	instructions := s.instructions()
	var nf *noaFront
	if deps.Sessions != nil {
		nf = &noaFront{sessions: deps.Sessions, idOf: s.sessionIDFunc(), nameOf: s.recordedName, log: log, recallOnly: deps.Sessions.RecallOnly(), refuse: deps.Sessions.RefuseUnrecorded()}
		mcpOpts = append(mcpOpts, mcpserver.WithToolHandlerMiddleware(nf.middleware))
		if !nf.recallOnly {
			instructions += "\n\n" + session.MCPInstructions()
		}
		// A client session that ends releases its host; its files stay and
		// the CLI (or a reconnect with the same id) reads them later.
		sessions, stdioID := deps.Sessions, opts.StdioSessionID
		hooks.AddOnUnregisterSession(func(_ context.Context, cs mcpserver.ClientSession) {
			id := sessionIDFor(cs, stdioID)
			if id == "" {
				return
			}
			if err := sessions.Release(id); err != nil {
				log.Warn("closing the noa session of a client that left", zap.String("session_id", id), zap.Error(err))
			}
		})
	}
	mcpOpts = append(mcpOpts, mcpserver.WithInstructions(instructions))
	mcpOpts = append(mcpOpts, s.pass.ServerOptions()...)
	// Last of the hooks, so the pager cuts pages from what clients may see.
	s.pass.Hook(hooks)
	s.mcp = mcpserver.NewMCPServer(opts.Name, opts.Version, mcpOpts...)
	s.pass.Attach(s.mcp)
	if opts.Mode == config.ModeRetrieve {
		s.mcp.AddTools(s.metaTools()...)
	}
	if nf != nil {
		// noa's tools are the same in both modes: in direct mode they sit
		// beside the upstream tools; an upstream tool that a configured
		// prefix would give one of their names is withheld (syncDirect).
		if nf.recallOnly {
			s.mcp.AddTool(readResultTool(), nf.readArchive)
		} else {
			s.mcp.AddTool(compressTool(), nf.compress)
			s.mcp.AddTool(readArchiveTool(), nf.readArchive)
		}
	}
	return s, nil
}

// recordedName is the name noa records a call under: the routed tool id
// ("server:tool") for call_tool and for a direct-mode tool, so
// protected_tools patterns and transcripts read the same in both modes.
func (s *Server) recordedName(req mcp.CallToolRequest) string {
	if s.opts.Mode == config.ModeDirect {
		s.mu.RLock()
		id, ok := s.directIDs[req.Params.Name]
		s.mu.RUnlock()
		if ok {
			return id
		}
	}
	return recordedToolName(req)
}

// sessionIDFunc keys noa hosts on the client session (see sessionIDFor). A
// request with no session id, which is every request of the 2026-07-28
// protocol (it has no sessions), cannot be given a host without mixing
// clients: it passes through without noa. That is logged once, so a user
// wondering why no nudge ever comes has an answer.
func (s *Server) sessionIDFunc() sessionIDFunc {
	idOf := clientSessionID(s.opts.StdioSessionID)
	var once sync.Once
	return func(ctx context.Context) string {
		id := idOf(ctx)
		if id == "" {
			once.Do(func() {
				s.log.Info("a client without a session id (the stateless 2026-07-28 protocol) is calling tools: noa cannot follow its conversation, so its calls pass through without ref tags, nudges or size cuts, and Compress and read_archive answer that they are unavailable")
			})
		}
		return id
	}
}

// Started releases the tool calls held back by Options.WaitForStart: the
// upstreams have had their first chance to connect. Calling it again does
// nothing.
func (s *Server) Started() {
	s.startedOnce.Do(func() { close(s.started) })
}

// IsStarted reports whether Started has been called: the upstreams have had
// their first chance to connect and the catalog holds what they listed
// (/readyz).
func (s *Server) IsStarted() bool {
	select {
	case <-s.started:
		return true
	default:
		return false
	}
}

// WhenStarted is closed once Started has been called.
func (s *Server) WhenStarted() <-chan struct{} { return s.started }

// waitStarted blocks until Started or until ctx ends.
func (s *Server) waitStarted(ctx context.Context) error {
	select {
	case <-s.started:
		return nil
	default:
	}
	select {
	case <-s.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) instructions() string {
	if s.opts.Mode == config.ModeDirect {
		return "mcproxy exposes the tools of several MCP servers; each tool is named server__tool, unless its server is configured with another prefix."
	}
	return "mcproxy fronts several MCP servers. Find a tool with retrieve_tools, then run it with call_tool using the exact id it returned."
}

// Resync reloads the whole catalog from the upstreams: every server with
// tools is upserted, every configured or previously known server without
// tools is removed.
func (s *Server) Resync() {
	byServer := map[string][]config.Tool{}
	for _, t := range s.up.Tools() {
		byServer[t.Server] = append(byServer[t.Server], t)
	}
	s.mu.RLock()
	var gone []string
	for name := range s.tools {
		if _, ok := byServer[name]; !ok {
			gone = append(gone, name)
		}
	}
	s.mu.RUnlock()
	slices.Sort(gone)
	for _, name := range gone {
		s.ToolsChanged(name, nil)
	}
	// Configured servers that have no tools now are cleared from the index
	// too: a persistent index may still hold what they had in an earlier run.
	if s.ix != nil && !s.opts.SharedIndex {
		s.syncMu.Lock()
		for _, st := range s.up.Status() {
			if _, ok := byServer[st.Server]; !ok && !slices.Contains(gone, st.Server) {
				s.syncIndex(st.Server, nil)
			}
		}
		s.syncMu.Unlock()
	}
	names := make([]string, 0, len(byServer))
	for name := range byServer {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s.ToolsChanged(name, byServer[name])
	}
	s.pass.Resync()
}

// Follow is the front's subscription to the tool catalog
// (catalog.Catalog.Subscribe): each server whose served tools differ
// between prev and next goes to ToolsChanged, on the subscription's
// goroutine, so the index and warm file writes never run on an upstream's
// supervisor.
func (s *Server) Follow(prev, next *catalog.Snapshot) {
	for _, name := range next.Changed(prev) {
		s.ToolsChanged(name, next.ServerTools(name))
	}
}

// ToolsChanged records server's new tool set (nil when it went down): it
// updates the catalog, the index and, in direct mode, the exposed tools
// (which sends tools/list_changed to clients). Follow calls it for each
// change of the tool catalog.
func (s *Server) ToolsChanged(server string, tools []config.Tool) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })

	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.warmLive(server, tools)
	s.mu.RLock()
	same := sameTools(s.tools[server], tools)
	s.mu.RUnlock()
	defer func() {
		s.mu.Lock()
		s.applied[server] = len(tools)
		s.mu.Unlock()
	}()
	if same {
		// A repeated report (a Resync after the manager's own callbacks,
		// a list_changed without changes) costs nothing.
		return
	}
	// Retrieve drops hits the catalog does not hold, so a search racing
	// this update never offers a tool that cannot be called.
	s.syncIndex(server, tools)

	s.mu.Lock()
	s.setCatalog(server, tools)
	s.mu.Unlock()

	if s.opts.Mode == config.ModeDirect {
		s.syncDirect()
	}
	s.log.Info("tools changed", zap.String("upstream", server), zap.Int("tools", len(tools)))
	s.announce(server, len(tools))
}

func (s *Server) syncIndex(server string, tools []config.Tool) {
	if s.ix == nil || s.opts.SharedIndex {
		return
	}
	if len(tools) == 0 {
		if err := s.ix.Remove(server); err != nil {
			s.log.Error("removing server from index", zap.String("upstream", server), zap.Error(err))
		}
		return
	}
	metas := make([]config.ToolMetadata, 0, len(tools))
	for _, t := range tools {
		m, err := s.opts.IndexMetadata(t)
		if err != nil {
			// The tool stays searchable by its plain fields rather than
			// vanishing because one arm could not encode it.
			s.log.Warn("encoding index metadata; indexing plain fields", zap.String("upstream", server), zap.String("tool", t.Name), zap.Error(err))
			m, _ = PlainMetadata(t)
		}
		metas = append(metas, s.withTitle(t, m))
	}
	if err := s.ix.Upsert(server, metas); err != nil {
		s.log.Error("indexing server tools", zap.String("upstream", server), zap.Error(err))
	}
}

// Retrieve runs a retrieve_tools query: the best matches, best first, for
// tools currently in the catalog. limit <= 0 means the configured default.
// The ranking is the index's, restricted to the tools this front serves,
// with limit taken after the restriction: a front serving a profile
// (Options.SharedIndex) ranks its tools exactly as the full index does.
func (s *Server) Retrieve(ctx context.Context, query string, limit int) ([]Match, error) {
	if s.ix == nil {
		return nil, errors.New("no search index in direct mode")
	}
	if limit <= 0 {
		limit = s.opts.RetrieveLimit
	}
	// Ask for a few more than wanted: hits the catalog cannot resolve (an
	// on-disk index may still hold a server that is gone, a shared index
	// every profile's tools) are dropped below. While too few are left
	// and the index had more, ask again deeper: the ranking's order does
	// not depend on its depth (retrieval.Pipeline.Search).
	for depth := limit + 10; ; depth *= 4 {
		r, err := s.ix.Search(ctx, query, depth)
		if err != nil {
			return nil, fmt.Errorf("searching tools: %w", err)
		}
		out := s.resolve(r, limit)
		if len(out) == limit || len(r.Hits) < depth {
			return out, nil
		}
	}
}

// resolve keeps the hits of r the catalog holds, up to limit.
func (s *Server) resolve(r retrieval.Ranking, limit int) []Match {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Match, 0, min(len(r.Hits), limit))
	for _, h := range r.Hits {
		t, ok := s.byID[h.ID]
		if !ok {
			// The index can trail the catalog by one update; never offer a
			// tool that cannot be called.
			continue
		}
		out = append(out, Match{Tool: t, Score: h.Score, Weak: r.Weak, Learned: h.Learned})
		if len(out) == limit {
			break
		}
	}
	return out
}

// tool looks a tool up in the catalog.
func (s *Server) tool(id string) (config.Tool, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.byID[id]
	return t, ok
}

// catalogIDs returns every tool id in the catalog, sorted.
func (s *Server) catalogIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := make([]string, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// sameTools reports whether two sorted tool sets are identical.
func sameTools(a, b []config.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y config.Tool) bool {
		return x.ID == y.ID && x.Server == y.Server && x.Name == y.Name &&
			x.Description == y.Description && bytes.Equal(x.Schema, y.Schema)
	})
}

// PlainMetadata is the default IndexMetadataFunc: the tool's own name,
// description and input-schema JSON.
func PlainMetadata(t config.Tool) (config.ToolMetadata, error) {
	return config.ToolMetadata{
		Name:        t.Name,
		ServerName:  t.Server,
		Description: t.Description,
		ParamsJSON:  string(t.Schema),
	}, nil
}

// MCP is the mcp-go server the transports (internal/transport) and
// in-process clients hand each client message to.
func (s *Server) MCP() *mcpserver.MCPServer { return s.mcp }

// Lifts is the table the stdio transport lifts large tools/call arguments
// into; the server's BeforeCallTool hook puts them back.
func (s *Server) Lifts() *largeargs.Table { return &s.lifts }
