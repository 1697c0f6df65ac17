package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcproxy/mcproxy/internal/arms"
	"github.com/mcproxy/mcproxy/internal/catalog"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/embed"
	"github.com/mcproxy/mcproxy/internal/index"
	"github.com/mcproxy/mcproxy/internal/integrity"
	"github.com/mcproxy/mcproxy/internal/learn"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
	"github.com/mcproxy/mcproxy/internal/retrieval"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// stack is a wired proxy: upstream manager, tool ranking and MCP front.
type stack struct {
	mgr   *upstream.Manager
	ix    *index.Index        // owned by rank; read for its size
	rank  *retrieval.Pipeline // owns the index and dense
	dense *embed.Dense        // nil when no embeddings provider is configured
	front *server.Server
	learn *learn.Learner // nil when nothing is learned; closed before the index

	// cat owns the tool state: the manager publishes into it, the
	// reviewer judges it, the front follows it (issue 28).
	cat      *catalog.Catalog
	reviewer *integrity.Reviewer // holds changed or suspicious tools (issue 16)
	// guard runs the calls the catalog allows; the default front and
	// every profile's view call through it.
	guard *integrity.Guard
	// fronts are the fronts the manager's prompt, resource and log
	// callbacks reach: the default one and the profiles' views.
	fronts *frontSet
	// cfg and opts are what the stack was wired from; a profile's view
	// takes its settings from them (profileview.go).
	cfg  *config.Config
	opts stackOptions
	// profiles are the HTTP profiles served as views over the stack, which
	// a config reload reconfigures; nil before they are (and over stdio).
	profiles atomic.Pointer[profileFronts]

	// stopGuard ends the reviewer's poll of the approvals file; guardDone
	// is closed when it has returned.
	stopGuard context.CancelFunc
	guardDone <-chan struct{}
	auth      *oauth.Set // sign-ins to HTTP upstreams; closed after mgr
	log       *zap.Logger
}

// stackOptions say how to wire a stack.
type stackOptions struct {
	// ToolFilter hides the tools a profile excludes (upstream.Options);
	// nil keeps every tool.
	ToolFilter func(server string, t mcp.Tool) bool
	// IndexDir is where the index lives; "" keeps it in memory.
	IndexDir string
	Version  string
	Logger   *zap.Logger
	// WaitForStart holds tool calls until start has run (see
	// server.Options.WaitForStart).
	WaitForStart bool
	// WarmCatalog is the file of the upstreams' last known tool lists
	// (server.Options.WarmCatalog); "" means no warm start.
	WarmCatalog string
	// Revisions is the file of the upstreams' remembered protocol
	// revisions (upstream.Options.Revisions); "" remembers them for this
	// run only.
	Revisions string
	// Sessions runs noa on client sessions; nil means off. The stack does
	// not own it: whoever made it closes it after the stack.
	Sessions *session.Manager
	// StdioSessionID is the noa session id of a stdio connection.
	StdioSessionID string
	// LearnFile is the store of words learned from use; "" learns
	// nothing (config "learn": false, or a run that keeps nothing).
	LearnFile string
	// Shared keeps the approvals, learned words, revisions and the
	// upstreams' OAuth tokens in the PostgreSQL store replicas share
	// (store.go); nil keeps them in files.
	Shared *pgstore.Store
	// OpenBrowser starts an upstream's OAuth sign-in in the user's
	// browser when the upstream asks for one (oauth.SystemOpener). nil =
	// such an upstream waits in "needs sign-in" for mcproxy auth login.
	OpenBrowser func(ctx context.Context, url string) error
	// OnCall is told of every tool call through the front
	// (server.Deps.OnCall); nil tells nobody.
	OnCall func(server.Call)
	// ConfigNotice is the front's line for the user while the config
	// file's last change was refused (server.Options.ConfigNotice); nil
	// means none.
	ConfigNotice func() string
}

// newStack wires cfg (already loaded and validated) into a stack. Nothing
// connects until start.
func newStack(cfg *config.Config, opts stackOptions) (*stack, error) {
	log := opts.Logger
	arm, err := arms.Resolve(cfg.Arm)
	if err != nil {
		return nil, &config.FieldError{Path: "arm", Message: err.Error()}
	}
	var learner *learn.Learner
	ixOpts := index.Options{Dir: opts.IndexDir, Expander: indexExpander(cfg.DataDir, log), Synonyms: cfg.Synonyms, Logger: log.Named("index")}
	if opts.LearnFile != "" {
		lo := learn.Options{Path: opts.LearnFile}
		if opts.Shared != nil {
			lo.Backend = opts.Shared.Learned()
		}
		store, err := learn.Open(lo)
		if err != nil {
			return nil, &config.FieldError{Path: "learn", Message: err.Error()}
		}
		ixOpts.Learned = store.Terms
		learner = &learn.Learner{Store: store, Log: log.Named("learn")}
	}
	ix, err := openIndex(ixOpts, log)
	if err != nil {
		return nil, err
	}
	if learner != nil {
		learner.Index = ix
	}
	if skipped := ix.SkippedSynonyms(); len(skipped) > 0 {
		log.Warn("synonyms: these words are not single words once analyzed (a phrase, an identifier or a stop word) and are ignored",
			zap.Strings("words", skipped))
	}
	dense, err := embed.FromConfig(cfg, log.Named("embed"))
	if err != nil {
		_ = ix.Close()
		return nil, err
	}
	rank, err := retrieval.New(ix, dense, retrieval.Options{})
	if err != nil {
		_ = dense.Close()
		_ = ix.Close()
		return nil, err
	}

	// Tool state has one owner, the catalog: the manager publishes each
	// server's listing into it, the reviewer (the integrity guard) judges
	// it there, and the front follows its snapshots (issue 28).
	reviewer := newReviewer(cfg, log, opts.Shared)
	cat := catalog.New(catalog.Options{Reviewer: reviewer, Logger: log.Named("catalog")})
	// Prompts, resources and server logs still go to the fronts by
	// callback (the default one and each profile's view, profileview.go);
	// they exist only after the manager does, and nothing is reported
	// before start.
	fronts := &frontSet{}
	tokens, _ := oauthStore(cfg, opts.Shared)
	auth := oauth.NewSet(oauth.Options{Store: tokens, Logger: log.Named("oauth"), Open: opts.OpenBrowser})
	mgr := upstream.New(cfg, upstream.Options{
		ToolFilter:    opts.ToolFilter,
		Limits:        ratelimit.New(),
		OAuth:         auth,
		Logger:        log.Named("upstream"),
		Revisions:     opts.Revisions,
		RevisionStore: revisionStore(opts.Shared),
		Catalog:       cat,
		OnCatalogChanged: func(name string, c *upstream.Catalog) {
			fronts.each(name, func(f *server.Server) { f.CatalogChanged(name, c) })
		},
		OnResourceUpdated: func(name, uri string) {
			fronts.each(name, func(f *server.Server) { f.ResourceUpdated(name, uri) })
		},
		OnLog: func(name string, n mcp.LoggingMessageNotification) {
			fronts.each(name, func(f *server.Server) { f.ServerLog(name, n) })
		},
	})
	g := integrity.New(mgr, cat)
	f, err := server.New(server.Deps{
		Upstreams: g,
		Index:     rank,
		Logger:    log.Named("server"),
		Sessions:  opts.Sessions,
		Learner:   learner,
		Catalogs:  mgr,
		OnCall:    opts.OnCall,
	}, server.Options{
		Version:        opts.Version,
		Mode:           cfg.Mode,
		RetrieveLimit:  cfg.RetrieveLimit,
		ListPageSize:   cfg.ListPageSize,
		Render:         server.ArmRenderer(arm.EncodeListing),
		IndexMetadata:  arms.BaselineMetadata, // full metadata whatever arm renders (issue 17)
		WaitForStart:   opts.WaitForStart,
		WarmCatalog:    opts.WarmCatalog,
		Launched:       mgr.Launched(),
		StdioSessionID: opts.StdioSessionID,
		ConfigNotice:   opts.ConfigNotice,
		Prefix: func(name string) string {
			return cfg.MCPServers[name].NamePrefix(name)
		},
	})
	if err != nil {
		_ = mgr.Close()
		cat.Close()
		auth.Close()
		_ = rank.Close()
		return nil, err
	}
	fronts.setMain(f)
	cat.Subscribe("front", f.Follow)
	return &stack{log: log, mgr: mgr, cat: cat, reviewer: reviewer, guard: g, fronts: fronts, cfg: cfg, opts: opts,
		ix: ix, rank: rank, dense: dense, front: f, auth: auth, learn: learner}, nil
}

// start connects every upstream (returning once each is up or has failed
// its first attempt, or ctx ends) and waits for their tools to be reviewed
// and in the front.
func (s *stack) start(ctx context.Context) {
	s.startGuard()
	s.mgr.Start(ctx)
	_ = s.cat.Settle(ctx) // ctx ended: the front catches up in the background
	s.front.Resync()
}

// ready is /readyz: ready once the upstream start has finished (every
// configured server has reported a state and the catalog holds the tools of
// those that are up); the line counts the servers ready. A misconfigured
// server is left out of the count, as a disabled one is: no restart or
// wait makes it ready, only an edit of the file (issue 30), so it must not
// hold a probe back; the line names how many there are.
func (s *stack) ready() (bool, string) {
	list := s.status()
	up, enabled, broken := 0, 0, 0
	for _, st := range list {
		switch st.State {
		case upstream.StateDisabled:
		case upstream.StateMisconfigured:
			broken++
		default:
			enabled++
		}
		if st.State == upstream.StateReady {
			up++
		}
	}
	note := ""
	if broken > 0 {
		note = fmt.Sprintf("; %d misconfigured (fix the config entry: mcproxy servers)", broken)
	}
	if !s.front.IsStarted() {
		return false, fmt.Sprintf("not ready: the upstreams are starting (%d of %d servers ready%s)", up, enabled, note)
	}
	return true, fmt.Sprintf("ready: %d of %d servers ready%s", up, enabled, note)
}

// status reports every configured upstream.
func (s *stack) status() []upstream.Status { return s.mgr.Status() }

// close stops the upstreams (children stop in stages), then the catalog
// and its subscribers, then the ranking's dense worker and index.
func (s *stack) close() error {
	err := s.mgr.Close()
	s.stopGuardPoll()
	s.cat.Close()
	s.auth.Close()
	if s.learn != nil {
		s.learn.Close() // its pending lessons still need the index
	}
	return errors.Join(err, s.rank.Close())
}

// openIndex opens the on-disk index in opts.Dir, falling back to memory when
// another mcproxy holds it: the index is rebuilt from the upstreams on every
// start, so a private in-memory copy loses nothing.
func openIndex(opts index.Options, log *zap.Logger) (*index.Index, error) {
	ix, err := index.New(opts)
	if err == nil || opts.Dir == "" {
		return ix, err
	}
	log.Warn("on-disk index unavailable; using an in-memory index", zap.String("dir", opts.Dir), zap.Error(err))
	opts.Dir = ""
	return index.New(opts)
}

// newLogger builds the process logger: human-readable lines on stderr, or
// appended to file when one is given. Nothing ever goes to stdout.
func newLogger(level, file string, stderr io.Writer) (*zap.Logger, func(), error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, nil, &config.FieldError{Path: "log_level", Message: fmt.Sprintf("%q is not a log level: want debug, info, warn or error", level)}
	}
	out := zapcore.Lock(zapcore.AddSync(stderr))
	closeFn := func() {}
	if file != "" {
		path := config.ExpandHome(file)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, nil, fmt.Errorf("creating log directory: %w", err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("opening log file: %w", err)
		}
		out = zapcore.Lock(f)
		closeFn = func() { _ = f.Sync(); _ = f.Close() }
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), out, lvl)
	return zap.New(core), closeFn, nil
}

// transport is the transport front (stdio, HTTP) serving st's MCP front.
func (st *stack) transport() (*mcptransport.Front, error) {
	return mcptransport.New(mcptransport.Deps{MCP: st.front.MCP(), Lifts: st.front.Lifts(), Log: st.log.Named("server")}, mcptransport.Options{})
}
