package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
	"github.com/mcproxy/mcproxy/internal/server"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// profileFronts serves each configured profile over streamable HTTP at
// /mcp/p/<name> and legacy SSE at /sse/p/<name> (issue 31). Until the MCP front is split to serve several
// views from one set of upstreams, each profile is a stack of its own (its
// own upstream connections, index and front, narrowed as serve --stdio
// --profile narrows its process), mounted behind internal/clientauth,
// which checks client tokens, binds them to their profiles and applies
// their rate limits. A profile's SSE stream announces its own message
// endpoint, /sse/p/<name>/message, which passes the same checks.
type profileFronts struct {
	handler http.Handler
	closers []func()
	// fronts are the profiles' MCP fronts, by profile name's order.
	fronts []*server.Server
	// auth checks client tokens; nil without profiles.
	auth *clientauth.Authenticator
}

// newProfileFronts builds and starts a stack per profile of cfg. Each
// stack is stopped by close. onCall is told of every tool call, as the
// default profile's stack tells it (nil tells nobody). shared, when not
// nil, shares the profiles' streamable HTTP sessions with other replicas.
func newProfileFronts(ctx context.Context, cfgPath string, cfg *config.Config, sessions *session.Manager, shared mcptransport.SessionStore, onCall func(server.Call), log *zap.Logger) (*profileFronts, error) {
	pf := &profileFronts{}
	if len(cfg.Profiles) == 0 {
		return pf, nil
	}
	if cfg.AuthToken == "" {
		log.Warn("profiles are served, but no auth_token is set: the default endpoint /mcp, with every tool, is open to anyone who can reach the listener; set auth_token so that only it opens /mcp")
	}
	dataDir := config.ExpandHome(cfg.DataDir)
	tokens, err := clienttoken.Open(dataDir, clienttoken.Options{Log: log.Named("tokens")})
	if err != nil {
		return nil, err
	}
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := tokens.Watch(wctx)
	pf.closers = append(pf.closers, func() { stopWatch(); <-watched })

	byProfile := map[string]http.Handler{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		prof := &stdioProfile{name: name}
		pcfg, err := loadConfig(cfgPath, prof.narrow)
		if err == nil {
			err = prof.check(pcfg)
		}
		if err != nil {
			pf.close()
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
		plog := log.With(zap.String("profile", name))
		indexDir := filepath.Join(dataDir, "index", "p", name)
		st, err := newStack(pcfg, stackOptions{
			IndexDir:     indexDir,
			WarmCatalog:  filepath.Join(indexDir, "tools.json"),
			Revisions:    filepath.Join(dataDir, upstream.RevisionsFile),
			ToolFilter:   prof.toolFilter,
			Version:      versionString(),
			Logger:       plog,
			WaitForStart: true,
			Sessions:     sessions,
			LearnFile:    learnFile(pcfg),
			OpenBrowser:  oauth.SystemOpener(),
			OnCall:       onCall,
		})
		if err != nil {
			pf.close()
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
		sctx, cancel := context.WithCancel(ctx)
		started := goroutine.Go(plog, "profile "+name+" upstream start", func() {
			defer st.front.Started()
			if _, err := st.front.WarmStart(); err != nil {
				plog.Warn("warm start", zap.Error(err))
			}
			st.start(sctx)
		})
		tr, err := st.transport()
		if err != nil {
			cancel()
			<-started
			_ = st.close()
			pf.close()
			return nil, fmt.Errorf("profile %s: %w", name, err)
		}
		opts := httpOptions(pcfg)
		opts.AuthToken = "" // clientauth has checked the request
		opts.SSEBasePath = clientauth.SSEProfilePrefix + name
		opts.Sessions = shared
		mux := http.NewServeMux()
		closeSessions := tr.Routes(mux, opts)
		byProfile[name] = mux
		pf.fronts = append(pf.fronts, st.front)
		pf.closers = append(pf.closers, func() {
			cancel()
			<-started
			closeSessions(context.Background())
			if err := st.close(); err != nil {
				plog.Warn("stopping the profile's upstreams", zap.Error(err))
			}
		})
	}
	pf.auth = clientauth.New(clientauth.Options{AuthToken: cfg.AuthToken, Tokens: tokens, Profiles: cfg.Profiles, Limits: ratelimit.New()})
	pf.handler = pf.auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := clientauth.FromContext(r.Context())
		h, ok := byProfile[id.Profile]
		switch r.URL.Path {
		case mcptransport.PathStreamable, mcptransport.PathSSE, mcptransport.PathMessage:
		default:
			ok = false
		}
		if !ok {
			http.Error(w, "not found: a profile is served over streamable HTTP at /mcp/p/<name> and legacy SSE at /sse/p/<name>", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return pf, nil
}

// route sends the profile paths to the profiles and everything else to
// next (the gateway; nil = 404), whose requests carrying a client token
// clientauth checks first (the profile's "gateway" setting).
func (pf *profileFronts) route(next http.Handler) http.Handler {
	if pf.handler == nil {
		return next
	}
	if next != nil {
		next = pf.auth.GatewayHandler(next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := clientauth.ProfileFromPath(r.URL.Path); ok {
			pf.handler.ServeHTTP(w, r)
			return
		}
		if next == nil {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// close stops every profile's stack, newest first.
func (pf *profileFronts) close() {
	for i := len(pf.closers) - 1; i >= 0; i-- {
		pf.closers[i]()
	}
	pf.closers = nil
}

// selfAuthenticating names the requests clientauth checks instead of
// Guard's auth_token: the profile paths and, when the gateway is served
// (gatewayPath non-nil), its requests carrying a client token.
func (pf *profileFronts) selfAuthenticating(gatewayPath func(string) bool) func(*http.Request) bool {
	return func(r *http.Request) bool {
		if _, _, ok := clientauth.ProfileFromPath(r.URL.Path); ok {
			return true
		}
		return pf.auth != nil && gatewayPath != nil && gatewayPath(r.URL.Path) && clientauth.CarriesClientToken(r)
	}
}
