// Package upstream owns mcproxy's connections to the MCP servers it fronts:
// one mcp-go client per configured server over stdio, legacy SSE or
// streamable HTTP. It initializes each with a timeout, lists tools (and
// prompts, resources and templates: catalog.go) across all pages, follows
// their list_changed notifications, reconnects with capped
// exponential backoff plus jitter (and on demand when a call needs a server
// that is down), keeps an HTTP server whose one request failed but which
// still answers ping, bounds each call, forwards cancellation, logs each stdio
// child's stderr under its server name and stops children in stages. What an
// upstream sends while serving a call (progress, log messages, sampling,
// elicitation and roots requests) goes to that call's Peer (requests.go);
// a server that keeps roots gets each session's before that session's calls,
// and calls of different sessions to it do not overlap (roots.go).
// The protocol revision each server settled on is remembered across runs
// in a file (Options.Revisions, revisions.go).
//
// It does not index, review or render tools and does not serve MCP itself;
// it publishes tool sets into the catalog (Options.Catalog). Secrets in
// a server's env and headers are never logged.
//
// Its size (about 5,100 lines, over the project's guide of 3,000 for one
// package) is one concern, the connection to each upstream server: its
// supervisor (link.go), what is sent on it (calls, the relay of the
// server's requests, roots, log levels, subscriptions) and what is read
// from it (tools, prompts and resources across pages) all run on the one
// link and its session, which a reconnect replaces as a whole. Split, the
// link and its session would have to be exported to each part. (OAuth, the
// one part with a seam of its own, is internal/oauth already.)
package upstream

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
	"github.com/mcproxy/mcproxy/internal/redact"
)

// Options tune a Manager. The zero value is ready to use.
type Options struct {
	// Logger receives connection events and each stdio child's stderr, with
	// the server name under the "upstream" field. nil = no logging.
	Logger *zap.Logger
	// Catalog receives each server's exposed (filtered) tools, the
	// upstream's own definitions, whenever they change: when it comes up,
	// when it sends tools/list_changed with a different set, and nil when it
	// goes down (catalog.Catalog.Update, which never blocks, so the
	// supervisor goes on at once; the review, the index and the disk writes
	// happen on the catalog's goroutines). nil = published nowhere.
	Catalog *catalog.Catalog
	// OnToolsChanged is called, after Catalog is updated, with the same
	// change in the proxy's plain form. It is never called concurrently for
	// the same server, and may call the Manager's methods other than Close.
	// It runs on the server's supervisor goroutine, so a slow callback
	// delays that server's reconnects. nil = no callback.
	OnToolsChanged func(server string, tools []config.Tool)
	// OnCatalogChanged is called like OnToolsChanged, right after it, with
	// the server's prompts, resources and templates (catalog.go); nil when
	// the server went down. nil = no callback.
	OnCatalogChanged func(server string, c *Catalog)
	// OnResourceUpdated is called when a server sends
	// notifications/resources/updated for uri. It runs on the connection's
	// reader, so it must not block. nil = no callback.
	OnResourceUpdated func(server, uri string)
	// MinBackoff and MaxBackoff bound the reconnect delay, which doubles per
	// consecutive failure. Zero = 1s and 30s.
	MinBackoff, MaxBackoff time.Duration
	// StopGrace is how long a stdio child gets to exit after its stdin is
	// closed before it is sent SIGTERM; TermGrace is how long it then gets
	// before SIGKILL. Zero = 2s each.
	StopGrace, TermGrace time.Duration
	// PingInterval is how often a ready HTTP upstream (SSE or streamable
	// HTTP) is pinged, so one that went away is noticed without waiting for
	// a call. Stdio children are watched through their process instead.
	// Zero = 30s; negative = never.
	PingInterval time.Duration
	// OAuth signs in to HTTP servers that answer 401 (see internal/oauth).
	// nil = no sign-in: such a server stays down with the 401's error.
	OAuth *oauth.Set
	// OnLog receives an upstream's notifications/message that no call in
	// flight can be credited with (server-wide messages), for every client
	// session. nil = dropped.
	OnLog func(server string, n mcp.LoggingMessageNotification)
	// Revisions is the file where the protocol revision each server
	// settled on is remembered across runs (revisions.go), so a start
	// does not probe again what the last run learned. "" = remembered
	// within this run only.
	Revisions string
	// RevisionStore, when set, keeps the revisions instead of the file
	// Revisions names: a store shared by replicas (internal/pgstore).
	RevisionStore RevisionStore
	// RootsWait is how long a call waits for a server that holds another
	// client session's roots to ask for its own after
	// notifications/roots/list_changed (roots.go). Zero = DefaultRootsWait.
	RootsWait time.Duration
	// ToolFilter, when non-nil, is asked about every tool a server lists
	// after allowed_tools and disabled_tools: a tool it refuses is neither
	// published nor callable (a call gets "upstream has no tool", with no
	// hint that it exists). A profile's process (serve --stdio --profile)
	// sets it from internal/profile. nil keeps every tool.
	ToolFilter func(server string, t mcp.Tool) bool
	// Limits, when non-nil, enforces each server's rate_limit
	// (mcpServers.<name>.rate_limit) on the calls sent to it, from every
	// client together. nil = no per-upstream limits.
	Limits *ratelimit.Limits
}

// Defaults for the zero Options fields.
const (
	DefaultMinBackoff = time.Second
	DefaultMaxBackoff = 30 * time.Second
	DefaultStopGrace  = 2 * time.Second
	DefaultTermGrace  = 2 * time.Second
	DefaultPing       = 30 * time.Second
)

// State is where a server's connection stands.
type State string

// The states a server can be in.
const (
	StateConnecting State = "connecting" // an attempt (initialize + tools/list) is running
	StateReady      State = "ready"      // initialized; calls go through
	StateDown       State = "down"       // the last attempt failed or the connection was lost; a retry is scheduled
	StateDisabled   State = "disabled"   // enabled: false in the config; never started
	// StateMisconfigured: the server's config entry has problems (an
	// unset ${VAR}, a bad field; config.Config.Broken), so it is never
	// started; LastError names them. The other servers run (issue 30).
	StateMisconfigured State = "misconfigured"
	// StateNeedsSignIn: the server wants an OAuth sign-in that mcproxy
	// cannot finish alone; it connects as soon as tokens are stored
	// (mcproxy auth login SERVER).
	StateNeedsSignIn State = "needs sign-in"
)

// Status is one server's state as Manager.Status reports it.
type Status struct {
	Server    string
	Transport string // stdio, sse or streamable-http
	State     State
	// LastError is why the server is down ("" when it is ready), or the
	// problems of a misconfigured server's entry.
	LastError string
	// Tools is how many tools the server exposes after filtering (0 unless ready).
	Tools int
	// RetryAt is when the next reconnect attempt is due (zero unless down).
	RetryAt time.Time
	// Since is when the server entered State (zero when it never started);
	// for a ready server, the start of its uptime.
	Since time.Time
}

// Manager keeps one connection per configured server. Its methods are safe
// for concurrent use.
type Manager struct {
	opts                   Options
	log                    *zap.Logger
	minBackoff, maxBackoff time.Duration
	stopGrace, termGrace   time.Duration
	pingInterval           time.Duration // <= 0: never
	maxMessage             int64         // limits.max_message_bytes
	rootsWait              time.Duration

	rosterMu sync.RWMutex // guards links and names, replaced whole by Reconfigure
	links    map[string]*link
	names    []string // sorted

	// redact masks secrets in logs and errors (mask.go).
	redact *redact.Redactor
	// revs remembers each server's protocol revision (revisions.go).
	revs *revisions

	ctx    context.Context // ends at Close; every supervisor runs under it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // orders Start's launch against Close
	closed  bool
	started chan struct{} // closed when Start has launched the supervisors

	logMu    sync.Mutex
	logLevel mcp.LoggingLevel // the last SetLogLevel ("" = never set)

	// beforeAttempt, set by tests before Start, runs on a supervisor
	// before each of its server's connection attempts. nil = nothing.
	beforeAttempt func(server string)
}

// New prepares a Manager for cfg's servers; nothing starts until Start. cfg
// is read, never modified, and must not be modified while the Manager runs.
func New(cfg *config.Config, opts Options) *Manager {
	m := &Manager{
		opts:         opts,
		log:          opts.Logger,
		minBackoff:   orDefault(opts.MinBackoff, DefaultMinBackoff),
		maxBackoff:   orDefault(opts.MaxBackoff, DefaultMaxBackoff),
		stopGrace:    orDefault(opts.StopGrace, DefaultStopGrace),
		termGrace:    orDefault(opts.TermGrace, DefaultTermGrace),
		pingInterval: opts.PingInterval,
		rootsWait:    orDefault(opts.RootsWait, DefaultRootsWait),
		maxMessage:   cfg.Limits.MaxMessageBytes,
		links:        map[string]*link{},
		started:      make(chan struct{}),
	}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	m.redact = secrets(cfg)
	m.log = redact.Logger(m.log, m.redact)
	if m.pingInterval == 0 {
		m.pingInterval = DefaultPing
	}
	if m.maxMessage <= 0 {
		m.maxMessage = config.DefaultMaxMessageBytes
	}
	if m.maxBackoff < m.minBackoff {
		m.maxBackoff = m.minBackoff
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.revs = loadRevisions(opts.Revisions, opts.RevisionStore, m.log)
	if cfg == nil {
		return m
	}
	for name, sc := range cfg.MCPServers {
		m.links[name] = m.newLink(name, sc, cfg)
		m.names = append(m.names, name)
	}
	for name, problems := range cfg.Broken {
		m.links[name] = m.newBrokenLink(name, problems, cfg)
		m.names = append(m.names, name)
	}
	sort.Strings(m.names)
	m.revs.keep(m.names)
	return m
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Start connects every enabled server (misconfigured ones aside) concurrently and returns once each has
// initialized and listed its tools or failed (each bounded by its init
// timeout), or when ctx ends. Servers that failed keep retrying in the
// background; ctx only bounds the waiting, not the connections. Calling
// Start again, or after Close, does nothing.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	select {
	case <-m.started:
	default:
		if !m.closed {
			links, names := m.roster()
			for _, name := range names {
				if l := links[name]; l.startable() {
					m.launch(l)
				}
			}
		}
		close(m.started)
	}
	m.mu.Unlock()
	links, names := m.roster()
	for _, name := range names {
		l := links[name]
		if !l.startable() {
			continue
		}
		select {
		case <-l.firstDone:
		case <-ctx.Done():
			return
		case <-m.ctx.Done():
			return
		}
	}
}

// Close stops every connection: HTTP sessions are ended and stdio children
// stopped in stages (see Options.StopGrace). When it returns no goroutine
// or child process of the Manager is left. It is safe to call more than once.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}

// Tools returns every ready server's exposed tools, sorted by ID. The result
// is the caller's to keep.
func (m *Manager) Tools() []config.Tool {
	var out []config.Tool
	links, names := m.roster()
	for _, name := range names {
		l := links[name]
		l.mu.Lock()
		if l.state == StateReady {
			for _, t := range l.tools {
				out = append(out, ToolFromMCP(name, t))
			}
		}
		l.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// MCPTool returns the upstream's own definition of one exposed tool, with
// its schemas verbatim in RawInputSchema/RawOutputSchema. ok is false when
// the server is unknown or not ready, or does not expose the tool.
func (m *Manager) MCPTool(server, name string) (mcp.Tool, bool) {
	links, _ := m.roster()
	l, ok := links[server]
	if !ok {
		return mcp.Tool{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != StateReady {
		return mcp.Tool{}, false
	}
	// The caller may keep and modify the tool; the cached list stays ours.
	return catalog.FindTool(l.tools, name)
}

// exposes reports whether the server is ready and lists tool (after
// filtering), and returns a copy of its definition.
func (l *link) exposes(tool string) (*mcp.Tool, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, found := slices.BinarySearchFunc(l.tools, tool, func(t mcp.Tool, n string) int { return strings.Compare(t.Name, n) })
	if l.state != StateReady || !found {
		return nil, false
	}
	t := l.tools[i]
	return &t, true
}

// Status reports every configured server, sorted by name.
func (m *Manager) Status() []Status {
	links, names := m.roster()
	out := make([]Status, 0, len(names))
	for _, name := range names {
		out = append(out, links[name].status())
	}
	return out
}

// Call runs tools/call on one server's tool. The upstream's answer comes
// back as is: a failing tool is a result with IsError set, not an error.
// Errors: ErrUnknownServer or ErrUnknownTool (wrapped); *DownError when the
// server cannot take calls (or its connection was found lost during this
// call); *TimeoutError past the call timeout; *CallError when an HTTP
// upstream failed this one request but still answers, so it stays ready. When ctx
// ends (or the call timeout passes) the upstream gets notifications/cancelled.
func (m *Manager) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	links, names := m.roster()
	l, ok := links[server]
	if !ok {
		return nil, fmt.Errorf("%w %q (configured: %s)", ErrUnknownServer, server, strings.Join(names, ", "))
	}
	select {
	case <-m.started:
	default:
		return nil, fmt.Errorf("calling %s:%s: the upstream manager has not been started", server, tool)
	}
	if m.ctx.Err() != nil {
		return nil, fmt.Errorf("calling %s:%s: the upstream manager is closed", server, tool)
	}
	s, err := l.acquire(ctx)
	if err != nil {
		return nil, err
	}
	def, ok := l.exposes(tool)
	if !ok {
		if !l.cfg.ToolAllowed(tool) {
			return nil, fmt.Errorf("%w: %q of upstream %q is hidden by mcpServers.%s.allowed_tools/disabled_tools",
				ErrUnknownTool, tool, server, server)
		}
		return nil, fmt.Errorf("%w: upstream %q has no tool %q", ErrUnknownTool, server, tool)
	}
	if m.opts.Limits != nil {
		release, err := m.opts.Limits.Acquire(ratelimit.Limit{
			Subject: "upstream " + server, ConfigKey: "mcpServers." + server + ".rate_limit", Config: l.cfg.RateLimit,
		}, time.Now())
		if err != nil {
			return nil, fmt.Errorf("calling %s:%s: %w", server, tool, err)
		}
		defer release()
	}

	cctx, cancel := context.WithTimeoutCause(ctx, l.call.d, errCallTimeout)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = tool
	req.Params.Arguments = args
	if args == nil {
		// Servers validate arguments as an object; null fails there.
		req.Params.Arguments = map[string]any{}
	}
	req.Header = s.paramHeaders(def, req.Params)
	in, cctx, err := l.enter(cctx, s, false)
	if err == nil {
		defer s.calls.end(in)
		if in != nil && in.token != "" {
			req.Params.Meta = &mcp.Meta{ProgressToken: in.token}
		}
		var res *mcp.CallToolResult
		switch fwd := forwardFrom(ctx); {
		case fwd != nil && s.modern.Load():
			res, err = s.forwardCall(cctx, req, fwd)
		case fwd != nil && fwd.RequestState != "":
			return nil, foreignState(server, tool, fwd.RequestState)
		default:
			res, err = s.callTool(cctx, req)
		}
		if err == nil {
			return res, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("calling %s:%s: %w", server, tool, ctx.Err())
	case cctx.Err() != nil && context.Cause(cctx) == errCallTimeout:
		return nil, &TimeoutError{Server: server, Tool: tool, Limit: l.call.d, Setting: l.call.setting}
	case needsSignIn(err):
		l.markLost(s, err)
		return nil, &DownError{Server: server, State: StateNeedsSignIn, LastError: err.Error()}
	case isConnErr(err) && s.proc == nil:
		return nil, l.httpCallFailed(s, tool, err)
	case isConnErr(err):
		return nil, l.lostDuringCall(s, tool, err)
	default:
		var re *RPCError
		if errors.As(err, &re) {
			re.Server = server
		}
		return nil, fmt.Errorf("calling %s:%s: %w", server, tool, m.mask(err))
	}
}

var errCallTimeout = fmt.Errorf("call timeout")

// enter registers the call of ctx's Peer on s (nil, with ctx as is, when
// ctx carries none; quiet: not a tool call, see inflight), after its turn when roots.go makes it wait, and makes
// the server take the caller's roots first when it holds another's. On
// error there is nothing to end.
func (l *link) enter(ctx context.Context, s *session, quiet bool) (*inflight, context.Context, error) {
	p := peerFrom(ctx)
	if p == nil {
		return nil, ctx, nil
	}
	in, cctx, err := s.calls.begin(ctx, l.name, p, !s.modern.Load(), quiet)
	if err != nil {
		return nil, ctx, err
	}
	if in.resync {
		if err := s.syncRoots(cctx, in, l.m.rootsWait, l.log); err != nil {
			s.calls.end(in)
			return nil, ctx, err
		}
	}
	return in, cctx, nil
}

// probeTimeout caps how long httpCallFailed waits for its ping (the init
// timeout applies when it is shorter).
const probeTimeout = 5 * time.Second

// httpCallFailed handles a tools/call to an HTTP upstream that failed at the
// transport level. One failed request (a 502 from a reverse proxy, a reset
// keep-alive connection) does not show that the server is gone, and taking
// it down for that would make a server behind a flaky proxy flap; so the
// server is pinged first and taken out of service only when the ping fails
// at the transport level or gets no answer in time. Either way the call
// itself fails: with a *CallError when the server stays, a *DownError when
// it does not.
func (l *link) httpCallFailed(s *session, tool string, err error) error {
	if p := s.readErr.Swap(nil); p != nil {
		err = *p // mcproxy cut the answer short; mcp-go does not say why
	}
	ctx, cancel := context.WithTimeout(l.m.ctx, min(l.init.d, probeTimeout))
	defer cancel()
	perr := s.ping(ctx)
	switch {
	case perr == nil || (!isConnErr(perr) && ctx.Err() == nil):
		// An answer, even a JSON-RPC error, means the server is there.
		ce := &CallError{Server: l.name, Tool: tool, Status: httpStatus(err), Err: l.m.mask(err)}
		l.log.Warn("a call failed at the HTTP level but the upstream answers ping; it stays connected",
			zap.String("tool", tool), zap.Error(ce.Err))
		return ce
	case ctx.Err() != nil && l.m.ctx.Err() == nil:
		perr = fmt.Errorf("no answer within %s", min(l.init.d, probeTimeout))
	}
	return l.lostDuringCall(s, tool, fmt.Errorf("%w; a ping right after failed too: %v", err, perr))
}

// statusRE finds the HTTP status in mcp-go's transport errors ("request
// failed with status 502: ...", "unexpected status code: 503").
var statusRE = regexp.MustCompile(`\bstatus(?: code)?:? (\d{3})\b`)

// httpStatus is the HTTP status a failed request was answered with, or 0.
func httpStatus(err error) int {
	m := statusRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// lostDuringCall takes a session whose transport failed mid-call out of
// service and explains it. A stdio child that died says why (exit status,
// last stderr lines), so it is given a moment to be reaped first.
func (l *link) lostDuringCall(s *session, tool string, err error) error {
	cause := err
	if p := s.readErr.Load(); p != nil {
		cause = *p
	} else if s.proc != nil {
		if s.proc.waitFor(time.Second) {
			cause = s.proc.exitError()
		}
	}
	lost := l.m.mask(fmt.Errorf("connection lost during a call to %q: %w", tool, cause))
	l.markLost(s, lost)
	e := &DownError{Server: l.name, State: StateDown, LastError: tidyError(lost.Error())}
	l.mu.Lock()
	if l.state == StateDown {
		e.RetryAt = l.retryAt
	}
	l.mu.Unlock()
	return e
}
