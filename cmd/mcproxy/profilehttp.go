package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/accesstoken"
	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/pgstore"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
)

// profileFronts serves each configured profile over streamable HTTP at
// /mcp/p/<name> and legacy SSE at /sse/p/<name> (issue 31), mounted behind
// internal/clientauth, which checks client tokens, binds them to their
// profiles and applies their rate limits. Each profile is a view over the
// default stack's one set of upstreams, catalog and ranking
// (profileview.go), so a server in several profiles starts once and a
// profile ranks its tools as the full index does. A profile's SSE stream
// announces its own message endpoint, /sse/p/<name>/message, which passes
// the same checks. A config reload adds, removes and changes profiles
// (reconfigure).
type profileFronts struct {
	handler http.Handler
	closers []func()
	// auth checks client tokens; nil without profiles.
	auth *clientauth.Authenticator

	st  *stack
	cfg *config.Config // the running config (httpOptions)
	log *zap.Logger
	// sessions shares the profiles' streamable HTTP sessions with other
	// replicas; nil keeps them in this process.
	sessions mcptransport.SessionStore
	// gateway, when set, takes each reload's profiles too (their
	// gateway_models); guarded by reload.
	gateway interface {
		SetProfiles(map[string]config.ProfileConfig)
	}
	// mu guards served; reconfigure holds reload too.
	reload sync.Mutex
	mu     sync.RWMutex
	served map[string]*servedProfile
}

// servedProfile is one profile's view and the HTTP routes serving it.
type servedProfile struct {
	view          *profileView
	mux           http.Handler
	closeSessions func(context.Context)
}

// newProfileFronts serves the profiles of cfg as views over st. Each is
// stopped by close. The client tokens are shared's when a shared store is
// configured; sessions, when not nil, shares the profiles' streamable HTTP
// sessions with other replicas.
func newProfileFronts(st *stack, cfg *config.Config, shared *pgstore.Store, sessions mcptransport.SessionStore, log *zap.Logger) (*profileFronts, error) {
	pf := &profileFronts{st: st, cfg: cfg, log: log, sessions: sessions, served: map[string]*servedProfile{}}
	if len(cfg.Profiles) == 0 {
		return pf, nil
	}
	if cfg.AuthToken == "" {
		log.Warn("profiles are served, but no auth_token is set: the default endpoint /mcp, with every tool, is open to anyone who can reach the listener; set auth_token so that only it opens /mcp")
	}
	tokens, err := openTokens(cfg, shared, log.Named("tokens"))
	if err != nil {
		return nil, err
	}
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := tokens.Watch(wctx)
	pf.closers = append(pf.closers, func() { stopWatch(); <-watched })
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		if err := pf.serve(name, cfg.Profiles[name]); err != nil {
			pf.stopAll()
			pf.close()
			return nil, err
		}
	}
	pf.closers = append(pf.closers, pf.stopAll, func() {
		// No reload reconfigures the profiles from here on.
		st.profiles.Store(nil)
		pf.reload.Lock()
		defer pf.reload.Unlock()
	})
	ao := clientauth.Options{AuthToken: cfg.AuthToken, Tokens: tokens, Profiles: cfg.Profiles, Limits: ratelimit.New()}
	if o := cfg.OAuthResource; o != nil {
		v, err := accesstoken.New(accesstoken.Options{Issuer: o.Issuer, JWKSURL: o.JWKSURL, Audience: o.Audience, ProfilesClaim: o.ProfilesClaim})
		if err != nil {
			pf.stopAll()
			pf.close()
			return nil, err
		}
		ao.AccessTokens = v
	}
	pf.auth = clientauth.New(ao)
	pf.handler = pf.auth.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := clientauth.FromContext(r.Context())
		pf.mu.RLock()
		sp, ok := pf.served[id.Profile]
		pf.mu.RUnlock()
		switch r.URL.Path {
		case mcptransport.PathStreamable, mcptransport.PathSSE, mcptransport.PathMessage:
		default:
			ok = false
		}
		if !ok {
			http.Error(w, "not found: a profile is served over streamable HTTP at /mcp/p/<name> and legacy SSE at /sse/p/<name>", http.StatusNotFound)
			return
		}
		sp.mux.ServeHTTP(w, r)
	}))
	st.profiles.Store(pf)
	return pf, nil
}

// serve builds profile name's view and routes and adds them to served.
func (pf *profileFronts) serve(name string, pc config.ProfileConfig) error {
	plog := pf.log.With(zap.String("profile", name))
	v, err := pf.st.newView(name, pc, plog)
	if err != nil {
		return err
	}
	tr, err := mcptransport.New(mcptransport.Deps{MCP: v.front.MCP(), Lifts: v.front.Lifts(), Log: plog.Named("server")}, mcptransport.Options{})
	if err != nil {
		pf.st.fronts.remove(v)
		v.close()
		return fmt.Errorf("profile %s: %w", name, err)
	}
	opts := httpOptions(pf.cfg)
	opts.AuthToken = "" // clientauth has checked the request
	opts.SSEBasePath = clientauth.SSEProfilePrefix + name
	opts.Sessions = pf.sessions
	mux := http.NewServeMux()
	closeSessions := tr.Routes(mux, opts)
	pf.mu.Lock()
	pf.served[name] = &servedProfile{view: v, mux: mux, closeSessions: closeSessions}
	pf.mu.Unlock()
	return nil
}

// unserve stops serving profile name: its sessions end and its view
// leaves the catalog's subscribers.
func (pf *profileFronts) unserve(name string) {
	pf.mu.Lock()
	sp, ok := pf.served[name]
	delete(pf.served, name)
	pf.mu.Unlock()
	if !ok {
		return
	}
	sp.closeSessions(context.Background())
	pf.st.fronts.remove(sp.view)
	sp.view.close()
}

// stopAll stops every profile, in name order.
func (pf *profileFronts) stopAll() {
	pf.mu.RLock()
	names := slices.Sorted(maps.Keys(pf.served))
	pf.mu.RUnlock()
	for _, name := range names {
		pf.unserve(name)
	}
}

// reconfigure applies a reloaded config's profiles: a new profile is
// served, a removed one stops (its clients' sessions end), one whose
// servers, tools or annotations changed shows its clients the new set
// (list_changed), and one whose mode, retrieve limit or noa switch changed
// is served anew. A config that served no profiles at start serves none
// until a restart (its clients' tokens were never opened).
func (pf *profileFronts) reconfigure(cfg *config.Config) {
	pf.reload.Lock()
	defer pf.reload.Unlock()
	if pf.auth == nil {
		if len(cfg.Profiles) > 0 {
			pf.log.Warn("profiles added to a config that served none are served from the next restart")
		}
		return
	}
	pf.cfg = cfg
	pf.mu.RLock()
	running := map[string]*profileView{}
	for name, sp := range pf.served {
		running[name] = sp.view
	}
	pf.mu.RUnlock()
	for _, name := range slices.Sorted(maps.Keys(running)) {
		if _, ok := cfg.Profiles[name]; !ok {
			pf.unserve(name)
			pf.log.Info("profile removed", zap.String("profile", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		pc := cfg.Profiles[name]
		v, ok := running[name]
		switch {
		case ok && reflect.DeepEqual(v.conf, pc):
			continue
		case ok && sameSettings(v.conf, pc):
			v.setProfile(pc)
			pf.log.Info("profile changed", zap.String("profile", name))
			continue
		case ok:
			pf.unserve(name)
		}
		if err := pf.serve(name, pc); err != nil {
			pf.log.Error("serving profile", zap.String("profile", name), zap.Error(err))
			continue
		}
		pf.log.Info("profile served", zap.String("profile", name))
	}
	pf.auth.SetProfiles(cfg.Profiles)
	if pf.gateway != nil {
		pf.gateway.SetProfiles(cfg.Profiles)
	}
}

// followedBy makes each reload's profiles reach h too, when it takes them
// (*gateway.Gateway: its profiles' gateway_models windows).
func (pf *profileFronts) followedBy(h http.Handler) {
	g, ok := h.(interface {
		SetProfiles(map[string]config.ProfileConfig)
	})
	if !ok {
		return
	}
	pf.reload.Lock()
	defer pf.reload.Unlock()
	pf.gateway = g
}

// sameSettings reports whether a and b have the same front settings
// (mode, retrieve limit, noa), which a view is built with; what they
// include a view applies in place (profileView.setProfile), and the rest
// is clientauth's and the gateway's.
func sameSettings(a, b config.ProfileConfig) bool {
	return a.Mode == b.Mode && a.RetrieveLimit == b.RetrieveLimit && reflect.DeepEqual(a.Noa, b.Noa)
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
		if pf.auth.ServesMetadata(r.URL.Path) {
			pf.auth.ServeMetadata(w, r)
			return
		}
		if next == nil {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// close stops every profile, newest first.
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
		if _, _, ok := clientauth.ProfileFromPath(r.URL.Path); ok || pf.auth.ServesMetadata(r.URL.Path) {
			return true
		}
		return pf.auth != nil && gatewayPath != nil && gatewayPath(r.URL.Path) && clientauth.CarriesClientToken(r)
	}
}
