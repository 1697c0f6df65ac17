package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/dashboard"
	"github.com/mcproxy/mcproxy/internal/gateway"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/metrics"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/redact"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/tokens"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("serve", "serve [flags]", stderr)
	cfgPath := fs.String("config", config.DefaultConfigPath(), "config file")
	stdio := fs.Bool("stdio", false, "speak MCP on stdin/stdout (for clients that launch mcproxy) instead of serving HTTP")
	listen := fs.String("listen", "", "HTTP address, overriding the config's listen (e.g. 127.0.0.1:8765)")
	mode := fs.String("mode", "", `"retrieve" (meta tools) or "direct" (every tool as server__tool), overriding the config's mode`)
	logLevel := fs.String("log-level", "", "debug, info, warn or error, overriding the config's log_level")
	logFile := fs.String("log-file", "", "append logs to this file instead of stderr")
	profileName := fs.String("profile", "", "with --stdio, serve only this profile's tools, prompts and resources (the config's profiles)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagError(stderr, fs, err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mcproxy serve: unexpected argument %q\n", pos[0])
		return exitUsage
	}

	var prof *stdioProfile
	if *profileName != "" {
		if !*stdio {
			fmt.Fprintf(stderr, "mcproxy serve: --profile needs --stdio; over HTTP, mcproxy serve serves every profile at once, this one at /mcp/p/%s and /sse/p/%s\n", *profileName, *profileName)
			return exitUsage
		}
		prof = &stdioProfile{name: *profileName}
	}
	override := func(c *config.Config) {
		if prof != nil {
			prof.narrow(c) // first, so the flags below win over the profile's settings
		}
		if *listen != "" {
			c.Listen = *listen
		}
		if *mode != "" {
			c.Mode = *mode
		}
		if *logLevel != "" {
			c.LogLevel = *logLevel
		}
	}
	cfg, notes, err := loadConfigNotes(*cfgPath, override)
	if err == nil && prof != nil {
		err = prof.check(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	if !*stdio {
		if err := checkBinding(cfg); err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
	}
	level := cfg.LogLevel
	if level == "" {
		level = "info"
	}
	log, closeLog, err := newLogger(level, *logFile, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	defer closeLog()
	log = redact.Logger(log, redactor(cfg, true))
	defer func() { _ = log.Sync() }()
	for _, n := range notes {
		log.Info("config note", zap.String("note", n))
	}
	logBroken(log, cfg)

	started := time.Now()
	dataDir := config.ExpandHome(cfg.DataDir)
	shared, err := openSharedStore(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	if shared != nil {
		// Deferred first, so it closes after everything that writes to it.
		defer shared.Close()
	}
	sessions, err := newSessions(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	if sessions != nil {
		// Deferred first, so it runs last: after the front has stopped
		// serving, every session's state.json is brought up to date.
		defer func() {
			if err := sessions.Close(); err != nil {
				log.Warn("closing noa sessions", zap.Error(err))
			}
		}()
	}
	// mcp-go gives the one stdio connection the constant session id
	// "stdio"; each run gets its own noa session instead.
	stdioID := session.NewSessionID(time.Now())
	var st *stack
	obs, err := newObservers(cfg, log, func() []metrics.Upstream { return upstreamStates(st) })
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	// Deferred before the stack, so it runs after: the calls still
	// answered while the upstreams stop are kept too.
	defer obs.close()
	// The last refused config reload (the reloader sets it; nil once one
	// succeeds), shown by /status, the dashboard and the meta tools.
	var refused atomic.Pointer[dashboard.RefusedReload]
	indexDir := filepath.Join(dataDir, "index")
	var toolFilter func(string, mcp.Tool) bool
	if prof != nil {
		// A profile's index and warm tool list hold only its tools, so
		// they live apart from the default profile's.
		indexDir = filepath.Join(dataDir, "index", "p", prof.name)
		toolFilter = prof.toolFilter
	}
	st, err = newStack(cfg, stackOptions{
		IndexDir:       indexDir,
		WarmCatalog:    filepath.Join(indexDir, "tools.json"),
		ToolFilter:     toolFilter,
		Revisions:      filepath.Join(dataDir, upstream.RevisionsFile),
		Version:        versionString(),
		Logger:         log,
		WaitForStart:   true,
		Sessions:       sessions,
		StdioSessionID: stdioID,
		LearnFile:      learnFile(cfg),
		Shared:         shared,
		OpenBrowser:    oauth.SystemOpener(),
		OnCall:         obs.call,
		ConfigNotice:   func() string { return refusedNotice(refused.Load()) },
	})
	if err != nil {
		fmt.Fprintf(stderr, "mcproxy: %v\n", err)
		return exitError
	}
	defer func() {
		if err := st.close(); err != nil {
			log.Warn("stopping upstreams", zap.Error(err))
		}
	}()
	if sessions != nil && *stdio {
		log.Info("noa session of this stdio connection", zap.String("session_id", stdioID))
	}

	// Bind first, so a taken port fails before anything starts.
	var ln net.Listener
	if !*stdio {
		ln, err = net.Listen("tcp", cfg.Listen)
		if err != nil {
			fmt.Fprintf(stderr, "mcproxy: listening on %s: %v (set another address with --listen or \"listen\" in the config)\n", cfg.Listen, err)
			return exitError
		}
		defer ln.Close()
		// So that status and servers find this mcproxy whatever --listen said.
		if remove, err := announce(dataDir, *cfgPath, ln.Addr().String()); err != nil {
			log.Warn("status and servers will find this mcproxy only with --listen", zap.Error(err))
		} else {
			defer remove()
		}
	}

	// Serve at once and connect the upstreams alongside: clients can
	// initialize right away; retrieve_tools and describe_tool answer from
	// the last known tool lists or wait a short grace for servers without
	// any, and call_tool waits for its server (server.Options).
	startCtx, cancelStart := context.WithCancel(ctx)
	startDone := goroutine.Go(log, "upstream start", func() {
		defer st.front.Started()
		// The last known tool lists answer retrieve_tools while the
		// upstreams connect (warm start, issue 13).
		if n, err := st.front.WarmStart(); err != nil {
			log.Warn("warm start", zap.Error(err))
		} else if n > 0 {
			log.Info("warm start: serving the last known tool lists while the upstreams connect", zap.Int("servers", n))
		}
		st.start(startCtx)
		logStatus(log, st.status())
		log.Info("mcproxy ready", zap.String("mode", cfg.Mode), zap.String("arm", cfg.Arm), zap.Bool("stdio", *stdio))
	})
	defer func() {
		cancelStart()
		<-startDone
	}()
	stopWatch := watchConfig(ctx, *cfgPath, override, cfg, st, &refused, log)
	defer stopWatch()

	if *stdio {
		if cfg.Gateway.Enabled {
			log.Warn("the model API gateway is served over HTTP only; with --stdio it is off (run a second mcproxy serve without --stdio for it)")
		}
		var tr *mcptransport.Front
		if tr, err = st.transport(); err == nil {
			err = tr.ServeStdio(ctx, stdin, stdout)
		}
	} else {
		opts := httpOptions(cfg)
		opts.Sessions = clientSessions(shared, cfg)
		var f faces
		var closeGateway func()
		var convs *session.Manager
		if f.Gateway, convs, closeGateway, err = newGateway(cfg, log, obs.metrics, shared); err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		defer closeGateway()
		var pf *profileFronts
		if pf, err = newProfileFronts(st, cfg, shared, opts.Sessions, log); err != nil {
			fmt.Fprintf(stderr, "mcproxy: %v\n", err)
			return exitError
		}
		defer pf.close()
		pf.followedBy(f.Gateway)
		hasGateway := f.Gateway != nil
		f.Gateway = pf.route(f.Gateway)
		var gatewayPath func(string) bool
		if hasGateway {
			gatewayPath = func(p string) bool {
				return strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, cfg.Gateway.OpenAI.Prefix+"/v1/")
			}
		}
		opts.SelfAuthenticating = pf.selfAuthenticating(gatewayPath)
		f.Dashboard = newDashboard(cfg, st, started, log, obs, refused.Load, hasGateway, whoIn(st.fronts.fronts), sessions, convs)
		f.Metrics = obs.metrics.Handler()
		opts.Ready = st.ready
		var tr *mcptransport.Front
		if tr, err = st.transport(); err == nil {
			h, closeSessions := serveMux(tr, opts, f)
			err = tr.Serve(ctx, ln, h, closeSessions)
		}
	}
	if err != nil {
		log.Error("serving", zap.Error(err))
		return exitError
	}
	log.Info("mcproxy stopped")
	return exitOK
}

// upstreamStates are st's servers' states for mcproxy_upstream_state (none
// before st is built).
func upstreamStates(st *stack) []metrics.Upstream {
	if st == nil {
		return nil
	}
	list := st.status()
	out := make([]metrics.Upstream, len(list))
	for i, s := range list {
		out[i] = metrics.Upstream{Server: s.Server, State: string(s.State)}
	}
	return out
}

// logStatus logs every upstream's state after start-up.
func logStatus(log *zap.Logger, statuses []upstream.Status) {
	for _, s := range statuses {
		fields := []zap.Field{zap.String("upstream", s.Server), zap.String("transport", s.Transport), zap.String("state", string(s.State)), zap.Int("tools", s.Tools)}
		if s.LastError != "" {
			fields = append(fields, zap.String("last_error", oneLine(s.LastError)))
			log.Warn("upstream status: not ready", fields...)
			continue
		}
		log.Info("upstream status", fields...)
	}
}

// logBroken warns of each server set aside for its config entry's problems.
func logBroken(log *zap.Logger, cfg *config.Config) {
	for _, name := range slices.Sorted(maps.Keys(cfg.Broken)) {
		log.Warn("server not started: its config entry has problems; the other servers run (fix the entry and save the file)",
			zap.String("upstream", name), zap.String("problems", cfg.Broken[name]))
	}
}

// loadConfig loads path, applies command-line overrides and validates the
// result again, so an override gets the same field-path errors as the file.
func loadConfig(path string, override func(*config.Config)) (*config.Config, error) {
	cfg, _, err := loadConfigNotes(path, override)
	return cfg, err
}

// loadConfigNotes is loadConfig that also returns the notes about other
// clients' keys the file holds (config.ParseWithNotes). A server whose
// entry has problems is set aside in cfg.Broken rather than refusing the
// file (config.ParseServing): one bad server never stops the rest.
func loadConfigNotes(path string, override func(*config.Config)) (*config.Config, []string, error) {
	cfg, notes, err := config.LoadServing(config.ExpandHome(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, missingConfig(path)
	}
	if err != nil {
		return nil, nil, err
	}
	override(cfg)
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("config %s (with command-line overrides): %w", path, err)
	}
	return cfg, notes, nil
}

// newGateway builds the model-API gateway when the config enables it (nil
// otherwise), the manager of its conversations' sessions (nil too) and the
// function that closes them.
// Each conversation is a noa session under <data_dir>/sessions/, like an
// MCP client's, paced against its model's window with the config's noa
// knobs; the index that recognises conversations is
// <data_dir>/gateway/conversations.jsonl. With a shared store (issue 32)
// the sessions and the index are kept there instead (the directories are
// this replica's working copies), and each turn of a conversation holds
// the conversation's lock across replicas.
func newGateway(cfg *config.Config, log *zap.Logger, mx *metrics.Metrics, shared *pgstore.Store) (http.Handler, *session.Manager, func(), error) {
	nothing := func() {}
	if !cfg.Gateway.Enabled {
		return nil, nil, nothing, nil
	}
	opts, _, err := sessionOptions(cfg) // noa's warnings are logged once, by newSessions
	if err != nil {
		return nil, nil, nothing, fmt.Errorf("gateway: %w", err)
	}
	tk, err := tokens.New(cfg.Tokenizer)
	if err != nil {
		return nil, nil, nothing, fmt.Errorf("gateway: %w", err)
	}
	dataDir := config.ExpandHome(cfg.DataDir)
	// The index drops conversations whose sessions are gone when it opens
	// and after each retention run, so it holds only what can be continued.
	var index gateway.Index
	var lock func(context.Context, string) (func(), error)
	closeIndex := func() error { return nil }
	if shared != nil {
		// A conversation's row goes with its session: nothing to prune.
		opts.Store, index, lock = shared.Sessions(), shared.Conversations(), shared.LockConversation
	} else {
		convs, err := gateway.OpenConversations(filepath.Join(dataDir, "gateway", "conversations.jsonl"),
			gateway.ConversationsOptions{Sessions: opts.Dir, Logger: log.Named("gateway")})
		if err != nil {
			return nil, nil, nothing, fmt.Errorf("gateway: %w", err)
		}
		opts.OnPrune = func(session.PruneReport) {
			if n := convs.Prune(opts.Dir); n > 0 {
				log.Info("forgot the conversations whose sessions are gone", zap.Int("conversations", n))
			}
		}
		index, closeIndex = convs, convs.Close
	}
	count := gateway.CountTokens(tk.Count)
	opts.Count = count
	opts.Logger = log.Named("gateway")
	sessions := session.NewManager(opts)
	hosts := &gateway.SessionHosts{Sessions: sessions, Count: count, Config: func(window int) noa.Config {
		knobs := cfg.Noa
		knobs.ContextLimit = window
		c, _ := session.EngineConfig(knobs)
		return c
	}, Logger: log.Named("gateway"), EngageAt: cfg.Gateway.EngageAt}
	g, err := gateway.New(gateway.Options{Config: cfg.Gateway, AuthToken: cfg.AuthToken, Logger: log.Named("gateway"), Hosts: hosts, Conversations: index, Lock: lock, Metrics: mx, Profiles: cfg.Profiles})
	if err != nil {
		_ = sessions.Close()
		_ = closeIndex()
		return nil, nil, nothing, err
	}
	if cfg.Noa.IsEnabled() && !cfg.Noa.RecallOnly() {
		log.Warn(`noa runs over MCP too: an agent that uses mcproxy as its MCP server and its model endpoint gets two sets of refs, nudges and Compress; set noa.mcp to "recall" so the gateway alone compresses (keep "full" for MCP-only clients such as Claude Desktop)`)
	}
	// Conversations nobody continues release their files after the idle
	// timeout, as MCP client sessions do.
	idleCtx, stopIdle := context.WithCancel(context.Background())
	idleDone := goroutine.Go(log, "gateway idle sweep", func() {
		hosts.RunIdle(idleCtx, cfg.SessionIdleTimeout.Std())
	})
	log.Info("model API gateway on", zap.String("anthropic", "/v1/"), zap.String("openai", cfg.Gateway.OpenAI.Prefix+"/v1/"),
		zap.Bool("projection", cfg.Gateway.ProjectEnabled()), zap.String("sessions", opts.Dir))
	return g, sessions, func() {
		stopIdle()
		<-idleDone
		g.Close()
		if err := sessions.Close(); err != nil {
			log.Warn("closing the gateway's sessions", zap.Error(err))
		}
		if err := closeIndex(); err != nil {
			log.Warn("closing the gateway's conversation index", zap.Error(err))
		}
	}, nil
}
