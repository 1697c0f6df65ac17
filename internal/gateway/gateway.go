// Package gateway is mcproxy's model-API face: an HTTP handler serving the
// Anthropic Messages API at /v1/ and OpenAI Chat Completions under a prefix
// of its own (/openai/v1/ by default), forwarding to the providers (or any
// server speaking their wire format) so that noa can project the whole
// conversation before the model reads it.
//
// It owns the provider side: routing, forwarding with the client's own
// credentials and headers (never logged, never stored: conversations are
// scoped by a hash of the credential), streaming, error passthrough,
// conversion between the providers' messages and noa.CoreMessage,
// recognising which conversation a stateless request continues (only among
// the conversations of its credential, under ids the gateway made), and
// the hidden rounds in which the model's own Compress and
// read_archive calls are answered without the client seeing them. A
// conversation is forwarded as the client sent it until it is engaged
// (engage.go: its tokens reached gateway.compress_at of its window), so
// one that never needs compression costs what going straight costs. Session
// state (transcripts, archives, noa's state) belongs to the host behind the
// Hosts interface; the gateway holds only what it can rebuild.
//
// Anything the gateway fails to do with a request (an unreadable body, a
// failed projection) falls back to forwarding the request as it came: the
// gateway may stop saving tokens, never lose a request. The exception is a
// request over gateway.limits (nested past max_json_depth), refused with a
// 400 naming the key. Parsing is linear in the request's size and stops
// when the client hangs up; a model's answer is read within
// gateway.limits too, and a malformed model stream ends the client's with
// the provider's error event. Each model request is counted in
// Options.Metrics: its rounds, hidden ones included, the client's tokens and
// those forwarded, and the usage the provider reported.
//
// Its size (about 5,400 lines, over the project's guide of 3,000 for one
// package) is one concern, a model request's way through the gateway: the
// wire formats (anthropic.go, openai.go, convert.go), the conversation
// identity (identity.go), the projection and its rounds (project.go,
// engage.go, firstround.go) and the stream pump (stream.go) all work on the
// same request and exchange types, and
// a provider's format is added by touching each of them. Split by stage,
// those types would have to be exported for one caller.
package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/metrics"
)

// Headers the gateway reads and never forwards.
const (
	// HeaderSession names the conversation: a name the client chooses,
	// looked up among the conversations of the client's credential only
	// (Scope), never a session id. With or without it the gateway
	// recognises the conversation by its messages.
	HeaderSession = "X-Mcproxy-Session"
)

// Options configure a Gateway.
type Options struct {
	// Config is the gateway section, defaults applied. Required: base URLs
	// and the OpenAI prefix come from it.
	Config config.GatewayConfig
	// AuthToken is mcproxy's own auth_token. A request's Authorization
	// header carrying exactly it ("Bearer <token>") is meant for mcproxy and
	// is not forwarded. Empty means none.
	AuthToken string
	// Transport performs upstream requests; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Logger receives warnings and errors (nil = no-op). Header values and
	// bodies are never logged.
	Logger *zap.Logger
	// Hosts holds the conversations' noa hosts. nil forwards every request
	// unprojected, as does config's project: false.
	Hosts Hosts
	// Conversations recognises conversations across requests; nil means an
	// index kept in memory only (conversations are then not recognised
	// after a restart). *Conversations keeps it in a file of this process;
	// pgstore's is shared by every replica.
	Conversations Index
	// Lock, when set, is held for each turn of a conversation (from
	// finding it to its last record) on top of the process's own lock:
	// replicas sharing a store serialise a conversation's turns with it
	// (pgstore's Lock, an advisory lock per conversation). nil = the
	// process's lock alone, enough for one process.
	Lock func(ctx context.Context, conv string) (unlock func(), err error)
	// Metrics counts requests, input tokens and hidden rounds; nil counts
	// nothing.
	Metrics *metrics.Metrics
	// Profiles are the configured profiles (config profiles). A request
	// whose context names a client token's profile (internal/clientauth)
	// is paced against that profile's gateway_models windows, and its
	// conversations are its token's alone. nil: the gateway's windows.
	// SetProfiles replaces them.
	Profiles map[string]config.ProfileConfig
}

// Gateway is the model-API handler. Create it with New; it is safe for
// concurrent use.
type Gateway struct {
	cfg       config.GatewayConfig
	log       *zap.Logger
	transport http.RoundTripper
	own       *http.Transport // the transport New made (nil: Options.Transport's)
	authToken string
	anthropic *provider
	openai    *provider
	hosts     Hosts
	convs     Index
	shared    func(ctx context.Context, conv string) (func(), error)
	metrics   *metrics.Metrics
	// profiles are Options.Profiles, then each SetProfiles.
	profiles atomic.Pointer[map[string]config.ProfileConfig]

	mu    sync.Mutex
	locks map[string]*convLock // one request at a time per conversation
}

// convLock is one conversation's lock: a one-slot channel, and how many
// requests hold it or wait for it, so that its entry leaves Gateway.locks
// once none does (the map holds only conversations in use, not every one
// ever seen).
type convLock struct {
	ch   chan struct{}
	refs int // guarded by Gateway.mu
}

// lock takes conversation conv's lock, waiting at most as long as ctx.
func (g *Gateway) lock(ctx context.Context, conv string) (func(), error) {
	g.mu.Lock()
	l, ok := g.locks[conv]
	if !ok {
		l = &convLock{ch: make(chan struct{}, 1)}
		g.locks[conv] = l
	}
	l.refs++
	g.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	case <-ctx.Done():
		g.unref(conv, l)
		return nil, ctx.Err()
	}
	local := func() {
		<-l.ch
		g.unref(conv, l)
	}
	if g.shared == nil {
		return local, nil
	}
	// The process's lock first: one replica's requests of a conversation
	// wait here, and hold one database connection between them.
	unlock, err := g.shared(ctx, conv)
	if err != nil {
		local()
		return nil, fmt.Errorf("locking conversation %s: %w", conv, err)
	}
	return func() {
		unlock()
		local()
	}, nil
}

// unref drops one holder or waiter of conv's lock, and the lock with the
// last.
func (g *Gateway) unref(conv string, l *convLock) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(g.locks, conv)
	}
}

// SetProfiles replaces the configured profiles (a config reload): requests
// from now on are paced against ps's gateway_models. ps must not be
// modified afterwards.
func (g *Gateway) SetProfiles(ps map[string]config.ProfileConfig) {
	g.profiles.Store(&ps)
}

// New builds a gateway from opts. It starts nothing.
func New(opts Options) (*Gateway, error) {
	cfg := opts.Config
	cfg.Enabled = true
	cfg.ApplyDefaults()
	g := &Gateway{cfg: cfg, log: opts.Logger, transport: opts.Transport, authToken: opts.AuthToken,
		hosts: opts.Hosts, convs: opts.Conversations, shared: opts.Lock, metrics: opts.Metrics, locks: map[string]*convLock{}}
	g.SetProfiles(opts.Profiles)
	if !cfg.ProjectEnabled() {
		g.hosts = nil
	}
	if g.convs == nil {
		g.convs, _ = OpenConversations("", ConversationsOptions{}) // in memory: cannot fail
	}
	if g.log == nil {
		g.log = zap.NewNop()
	}
	if g.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		g.transport, g.own = t, t
	}
	var err error
	if g.anthropic, err = g.newProvider(anthropicAPI, cfg.Anthropic.BaseURL, ""); err != nil {
		return nil, err
	}
	if g.openai, err = g.newProvider(openaiAPI, cfg.OpenAI.BaseURL, cfg.OpenAI.Prefix); err != nil {
		return nil, err
	}
	return g, nil
}

// Close releases what the gateway made for itself: the idle connections
// of its own transport (none of a Transport given in Options, which stays
// the caller's). Requests in flight are not cut; the caller stops serving
// first.
func (g *Gateway) Close() {
	if g.own != nil {
		g.own.CloseIdleConnections()
	}
}

// api names a provider's wire format.
type api string

const (
	anthropicAPI api = "anthropic"
	openaiAPI    api = "openai"
)

// provider is one upstream API.
type provider struct {
	api    api
	base   *url.URL
	prefix string // served under prefix+"/v1/"; "" for Anthropic
	proxy  *httputil.ReverseProxy
}

// ServeHTTP routes a request: Anthropic's API at /v1/, OpenAI's at
// <prefix>/v1/; anything else is 404.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, rest := g.route(r.URL.Path)
	if p == nil {
		writeError(w, anthropicAPI, http.StatusNotFound, "not_found_error",
			"mcproxy gateway: no API at "+r.URL.Path+" (Anthropic: /v1/..., OpenAI: "+g.openai.prefix+"/v1/...)")
		return
	}
	tw := &trackingWriter{ResponseWriter: w}
	defer g.recoverPanic(tw, r, p.api)
	w = tw
	switch {
	case p.api == anthropicAPI && rest == "/v1/messages" && r.Method == http.MethodPost:
		g.modelRequest(w, r, p)
	case p.api == anthropicAPI && rest == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		g.countTokens(w, r, p)
	case p.api == openaiAPI && rest == "/v1/chat/completions" && r.Method == http.MethodPost:
		g.modelRequest(w, r, p)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// route finds the provider serving path and the path below its prefix.
func (g *Gateway) route(path string) (*provider, string) {
	if rest, ok := strings.CutPrefix(path, g.openai.prefix); ok && strings.HasPrefix(rest, "/v1/") {
		return g.openai, rest
	}
	if strings.HasPrefix(path, "/v1/") {
		return g.anthropic, path
	}
	return nil, ""
}
