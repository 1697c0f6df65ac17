package mcptransport

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/authheader"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
	"github.com/mcproxy/mcproxy/internal/largeargs"
	"github.com/mcproxy/mcproxy/internal/sdklog"
)

// HTTP paths the MCP transports serve.
const (
	PathStreamable = "/mcp"
	PathSSE        = "/sse"
	PathMessage    = "/message"
	// PathHealth answers 200 while the process serves; PathReady 200 once
	// HTTPOptions.Ready says so, 503 before. Both answer without auth_token
	// (Guard): probes often cannot send it, and they tell nothing else.
	PathHealth = "/healthz"
	PathReady  = "/readyz"
)

// Deps are what a Front serves.
type Deps struct {
	// MCP is the MCP server every message is handed to (the MCP front's,
	// server.Server.MCP). Required.
	MCP *mcpserver.MCPServer
	// Lifts takes the large arguments of tools/call lines on stdio until
	// the MCP front's BeforeCallTool hook restores them
	// (server.Server.Lifts); nil lifts nothing on stdio.
	Lifts *largeargs.Table
	// Log gets the transports' records; nil logs nothing.
	Log *zap.Logger
}

// Options configure a Front. The zero value is ready.
type Options struct {
	// ShutdownTimeout bounds graceful HTTP shutdown; zero means 5s.
	ShutdownTimeout time.Duration
	// StdioSDKDispatch serves every stdio line through mcp-go's
	// StdioServer, tools/call too, without the lean path of
	// stdio_calls.go: the two give the same answers, and tests compare
	// them. False: the lean path.
	StdioSDKDispatch bool
}

// Front serves one MCP server over stdio and HTTP (streamable HTTP and
// legacy SSE).
type Front struct {
	mcp   *mcpserver.MCPServer
	lifts *largeargs.Table
	log   *zap.Logger
	opts  Options
}

// New returns a Front serving deps.MCP.
func New(deps Deps, opts Options) (*Front, error) {
	if deps.MCP == nil {
		return nil, errors.New("transport: Deps.MCP is required")
	}
	if deps.Log == nil {
		deps.Log = zap.NewNop()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	return &Front{mcp: deps.MCP, lifts: deps.Lifts, log: deps.Log, opts: opts}, nil
}

// HTTPOptions configure the HTTP transports' safety checks.
type HTTPOptions struct {
	// AuthToken, when non-empty, must arrive on every request as
	// "Authorization: Bearer <token>"; other requests get 401.
	AuthToken string
	// ListenHost is the host part of the configured listen address. Besides
	// localhost and loopback addresses, it is the one Host/Origin accepted.
	// Empty (or a wildcard like 0.0.0.0) adds nothing.
	ListenHost string
	// Page, when non-nil, serves the dashboard's page, GET / (exactly),
	// which Guard lets through without auth_token (see Guard): static
	// HTML whose data, served by the mux, does need it.
	Page http.Handler
	// Ready reports whether mcproxy is ready to serve and a line saying
	// why (or why not) for /readyz; nil means ready once serving.
	Ready func() (bool, string)
	// AllowedHosts are more host names Host and Origin may carry (config
	// allowed_hosts): a deployment's name behind a reverse proxy or on a LAN.
	AllowedHosts []string
	// SessionIdleTimeout ends a streamable HTTP session with no request for
	// this long (sessions.go); zero means config.DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// Limits cap request bodies and batches (limits.go).
	Limits Limits
	// SelfAuthenticating, when non-nil, names the requests that check
	// their own credential (the profile paths /mcp/p/<name>, which
	// internal/clientauth serves with client tokens): Guard still checks
	// their Host and Origin but not AuthToken. nil = none.
	SelfAuthenticating func(r *http.Request) bool
	// SSEBasePath is the path legacy SSE is mounted under, which the
	// endpoint event it sends names for the client's messages: a profile
	// served at /sse/p/<name> announces /sse/p/<name>/message. "" = the
	// root (/message).
	SSEBasePath string
	// Sessions shares streamable HTTP sessions with other replicas
	// (shared.go; pgstore's with "store": {"postgres": ...}); nil keeps
	// them in this process.
	Sessions SessionStore
}

// ServeStdio serves one client over in/out (the process's stdin/stdout when
// a client launches mcproxy). It writes nothing but protocol messages to out
// and returns when in reaches EOF or ctx ends.
func (f *Front) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	st := mcpserver.NewStdioServer(f.mcp)
	st.SetErrorLogger(zap.NewStdLog(f.log.Named("stdio")))
	b := newStdioBatches(out, f.log.Named("stdio"))
	b.lifts = f.lifts
	// The lean path of tools/call (stdio_calls.go) runs on the session
	// context Listen makes, which it hands to the context function.
	if !f.opts.StdioSDKDispatch {
		b.calls = newStdioCalls(f.mcp, b, f.log.Named("stdio"))
		st.SetContextFunc(b.calls.start)
	}
	lines := b.split(pollable(in))
	// Once Listen is done nobody reads the lines; closing them ends the
	// goroutine feeding them at its next line.
	defer lines.Close()
	err := st.Listen(ctx, lines, b)
	if b.calls != nil {
		b.calls.stop()
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("serving stdio: %w", err)
	}
	return nil
}

// Routes puts streamable HTTP at /mcp and legacy SSE at /sse + /message on
// mux, and returns a function that closes every open session (streams) for
// shutdown. The mux is the caller's, to put its other faces on (the gateway,
// the dashboard); serve it behind Guarded.
func (f *Front) Routes(mux *http.ServeMux, opts HTTPOptions) func(ctx context.Context) {
	slogger := sdklog.New(f.log.Named("http"), false)
	// mcp-go's own DNS-rebinding check is replaced by Guard, which also
	// accepts the configured listen host and checks Origin.
	idle := opts.SessionIdleTimeout
	if idle <= 0 {
		idle = config.DefaultSessionIdleTimeout
	}
	reg := newSessionRegistry(idle, f.log.Named("sessions"))
	reg.max = opts.Limits.withDefaults().MaxSessions
	streamable := mcpserver.NewStreamableHTTPServer(f.mcp,
		mcpserver.WithSessionIdManagerResolver(reg),
		mcpserver.WithStreamableHTTPLogger(slogger),
		mcpserver.WithDisableLocalhostProtection(true),
		mcpserver.WithHeartbeatInterval(30*time.Second),
	)
	owners := newSSEOwners()
	sseOpts := []mcpserver.SSEOption{
		mcpserver.WithSSEEndpoint(PathSSE),
		mcpserver.WithMessageEndpoint(PathMessage),
		mcpserver.WithSSEDisableLocalhostProtection(true),
		mcpserver.WithKeepAliveInterval(30 * time.Second),
		mcpserver.WithSessionIDGenerator(owners.generate),
	}
	if opts.SSEBasePath != "" {
		sseOpts = append(sseOpts, mcpserver.WithStaticBasePath(opts.SSEBasePath))
	}
	sse := mcpserver.NewSSEServer(f.mcp, sseOpts...)
	batches := f.log.Named("batch")
	reg.end = endByDelete(streamable)
	reg.store, reg.replay = opts.Sessions, streamable
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	sweepDone := goroutine.Go(f.log, "session sweep", func() { reg.run(sweepCtx) })
	mux.Handle(PathStreamable, checkID(batchHTTP(removedSetLevel(reg.track(liftArguments(callStreams(correctAnswers(streamable))))), true, batches)))
	mux.Handle(PathSSE, owners.stream(correctStream(sse.SSEHandler())))
	mux.Handle(PathMessage, checkID(batchHTTP(owners.messages(sse.MessageHandler()), false, batches)))
	return func(ctx context.Context) {
		stopSweep()
		<-sweepDone
		sse.CloseSessions()
		// The streamable server has no http.Server of its own here, so
		// Shutdown only ends its sessions and listening streams.
		_ = streamable.Shutdown(ctx)
	}
}

// Guarded is next behind what every HTTP request passes first: Guard, then
// the body read within opts.Limits (readBody).
func Guarded(next http.Handler, opts HTTPOptions) http.Handler {
	return Guard(readBody(next, opts.Limits), opts)
}

// Handler returns the HTTP handler of the MCP transports alone (Routes on
// a mux of their own, Guarded) and the function that closes their sessions.
func (f *Front) Handler(opts HTTPOptions) (http.Handler, func(ctx context.Context)) {
	mux := http.NewServeMux()
	closeSessions := f.Routes(mux, opts)
	return Guarded(mux, opts), closeSessions
}

// Serve serves h on ln until ctx ends, then shuts down gracefully:
// closeSessions (Routes' function; nil for none) closes open streams,
// in-flight requests get ShutdownTimeout to finish, and what is still open
// after that is cut.
func (f *Front) Serve(ctx context.Context, ln net.Listener, h http.Handler, closeSessions func(context.Context)) error {
	var fresh unusedConns
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// Streams (SSE, streamable GET) are long-lived, so there is no
		// read/write timeout; idle keep-alive connections are reclaimed.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    zap.NewStdLog(f.log.Named("http")),
		ConnState:   fresh.track,
	}
	errc := make(chan error, 1)
	goroutine.Go(f.log, "HTTP server", func() {
		defer goroutine.Recover(f.log, "HTTP server", func(v any) { errc <- goroutine.Error(v) })
		errc <- srv.Serve(ln)
	})
	f.log.Info("serving HTTP", zap.String("addr", ln.Addr().String()),
		zap.String("streamable_http", PathStreamable), zap.String("sse", PathSSE))

	select {
	case err := <-errc:
		return fmt.Errorf("serving HTTP on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeoutCause(context.Background(), f.opts.ShutdownTimeout,
		fmt.Errorf("HTTP shutdown did not finish within %s", f.opts.ShutdownTimeout))
	defer cancel()
	if closeSessions != nil {
		closeSessions(sctx)
	}
	// net/http waits up to 5s for a connection that has not sent its first
	// request yet (an HTTP client often opens a spare one); nothing is in
	// flight on it, so it is closed now rather than holding up the exit.
	fresh.closeAll()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		<-errc
		return fmt.Errorf("shutting down HTTP: %w", context.Cause(sctx))
	}
	<-errc
	return nil
}

// unusedConns tracks connections that have not yet sent a request
// (http.StateNew).
type unusedConns struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is an http.Server ConnState hook.
func (u *unusedConns) track(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st != http.StateNew {
		delete(u.conns, c)
		return
	}
	if u.conns == nil {
		u.conns = map[net.Conn]struct{}{}
	}
	u.conns[c] = struct{}{}
}

// closeAll closes every connection still waiting for its first request.
func (u *unusedConns) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		_ = c.Close()
	}
	u.conns = nil
}

// Guard wraps next with the checks every HTTP request passes first:
//   - Host and Origin (when present) must name this machine: localhost,
//     127.0.0.0/8, ::1, opts.ListenHost or one of opts.AllowedHosts;
//     anything else gets 403. This stops DNS rebinding, where a web page's
//     own domain is pointed at 127.0.0.1 so the browser talks to a local
//     server (MCP spec, security practices). It is a barrier for browsers
//     only: any other client sets Host to whatever it likes, which is why
//     listening beyond loopback needs AuthToken.
//   - With opts.AuthToken set, "Authorization: Bearer <token>" or
//     "X-Mcproxy-Token: <token>" (for model API clients whose Authorization
//     carries the provider's key, and for the dashboard's fetches) must
//     match (constant-time); otherwise 401. No cookie or query value
//     carries it: a browser sends a cookie to every port of the host
//     (issue 26). Only the dashboard's page (GET /, with opts.Page) is
//     served without it: static HTML a browser navigates to, which reads the
//     token from the URL fragment (never sent) and puts it on its requests;
//     and the probes, GET /healthz and /readyz, whose answers say only
//     whether mcproxy is up and ready.
//
// It never logs header values.
func Guard(next http.Handler, opts HTTPOptions) http.Handler {
	allowed := allowedHosts(opts.ListenHost, opts.AllowedHosts)
	var want [32]byte
	if opts.AuthToken != "" {
		want = sha256.Sum256([]byte(opts.AuthToken))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLocal(hostOnly(r.Host), allowed) {
			http.Error(w, "forbidden: Host is not local (mcproxy accepts only requests addressed to localhost or its listen address)", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || u.Host == "" || !isLocal(normalizeHost(u.Hostname()), allowed) {
				http.Error(w, "forbidden: Origin is not local (cross-site requests to mcproxy are refused)", http.StatusForbidden)
				return
			}
		}
		authorized := true
		if opts.AuthToken != "" {
			token, ok := authheader.Bearer(r.Header.Get("Authorization"))
			if t := r.Header.Get(authheader.Token); t != "" {
				token, ok = t, true // Authorization may carry a model provider's key
			}
			got := sha256.Sum256([]byte(token))
			authorized = ok && subtle.ConstantTimeCompare(got[:], want[:]) == 1
		}
		if isProbe(r) {
			serveProbe(w, r, opts.Ready)
			return
		}
		if opts.Page != nil && isDashboardPage(r) {
			// Straight to the page, not through the mux, so no other
			// handler is ever reached without the token. A browser's
			// navigation carries no header, so without the token the page
			// still comes, as the body of a 401: the endpoint refuses like
			// every other, and the page's script, which reads the token from
			// the URL fragment (never sent), fetches its data with it.
			if !authorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcproxy"`)
				w = &unauthorizedPage{ResponseWriter: w}
			}
			opts.Page.ServeHTTP(w, r)
			return
		}
		if opts.AuthToken != "" && (opts.SelfAuthenticating == nil || !opts.SelfAuthenticating(r)) {
			if !authorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcproxy"`)
				http.Error(w, "unauthorized: send the configured auth_token as \"Authorization: Bearer <token>\" (in a browser, open the dashboard as /#token=<token>)", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// unauthorizedPage turns the dashboard page's 200 into a 401 (a redirect,
// the old ?token= link moving to the fragment, stays as it is).
type unauthorizedPage struct {
	http.ResponseWriter
	wrote bool
}

func (u *unauthorizedPage) WriteHeader(code int) {
	if u.wrote {
		return
	}
	u.wrote = true
	if code == http.StatusOK {
		code = http.StatusUnauthorized
	}
	u.ResponseWriter.WriteHeader(code)
}

func (u *unauthorizedPage) Write(b []byte) (int, error) {
	u.WriteHeader(http.StatusOK)
	return u.ResponseWriter.Write(b)
}

// isProbe reports whether r asks for /healthz or /readyz.
func isProbe(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.RawPath == "" &&
		(r.URL.Path == PathHealth || r.URL.Path == PathReady)
}

// serveProbe answers /healthz (the process serves) and /readyz (ready
// reports so).
func serveProbe(w http.ResponseWriter, r *http.Request, ready func() (bool, string)) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == PathHealth {
		_, _ = io.WriteString(w, "ok\n")
		return
	}
	ok, why := true, "ready"
	if ready != nil {
		ok, why = ready()
	}
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = io.WriteString(w, why+"\n")
}

// isDashboardPage reports whether r asks for the dashboard's page: GET /
// exactly, spelled without escapes.
func isDashboardPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.RawPath == ""
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return normalizeHost(host)
	}
	return normalizeHost(hostport)
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// allowedHosts is the set of names, besides localhost and loopback,
// that Host and Origin may carry: the listen host (unless a wildcard
// address) and the configured allowed hosts, normalized.
func allowedHosts(listenHost string, more []string) map[string]bool {
	out := map[string]bool{}
	if h := normalizeHost(listenHost); h != "" {
		if ip, err := netip.ParseAddr(h); err != nil || !ip.IsUnspecified() {
			out[h] = true
		}
	}
	for _, h := range more {
		if h = normalizeHost(h); h != "" {
			out[h] = true
		}
	}
	return out
}

// isLocal reports whether host (no port, normalized) is this machine as far
// as a browser is concerned: localhost, a loopback IP, or an allowed host.
func isLocal(host string, allowed map[string]bool) bool {
	if host == "" {
		return false
	}
	return allowed[host] || IsLoopback(host)
}
