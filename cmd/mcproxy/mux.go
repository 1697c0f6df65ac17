package main

import (
	"context"
	"net/http"

	"github.com/mcproxy/mcproxy/internal/clientauth"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// The process serves three faces on one HTTP listener: MCP (the front's
// transports), the model API gateway and the dashboard (with /metrics).
// This file composes them into one mux; each package owns only its own
// routes.

// faces are the HTTP faces served beside MCP; a nil field is not served.
type faces struct {
	// Gateway serves every path the MCP transports do not (the model APIs
	// of internal/gateway).
	Gateway http.Handler
	// Dashboard serves GET / (exactly), /status and /status/
	// (internal/dashboard). Its page, GET /, is static and needs no
	// auth_token (mcptransport.Guard); its data does.
	Dashboard http.Handler
	// Metrics serves GET /metrics (internal/metrics), behind the same
	// auth_token as /status.
	Metrics http.Handler
}

// serveMux is the process's HTTP handler: the MCP transports' routes and
// every face's on one mux, behind the guard every request passes
// (mcptransport.Guarded), and the function that closes the MCP sessions
// for shutdown.
func serveMux(tr *mcptransport.Front, opts mcptransport.HTTPOptions, f faces) (http.Handler, func(context.Context)) {
	mux := http.NewServeMux()
	closeSessions := tr.Routes(mux, opts)
	if f.Gateway != nil {
		mux.Handle("/", f.Gateway)
	}
	if f.Dashboard != nil {
		mux.Handle("GET /{$}", f.Dashboard)
		mux.Handle("GET /status", f.Dashboard)
		mux.Handle("GET /status/", f.Dashboard)
		opts.Page = f.Dashboard
	}
	if f.Metrics != nil {
		mux.Handle("GET /metrics", f.Metrics)
	}
	var inner http.Handler = mux
	if opts.AuthToken != "" {
		inner = adminIdentity(mux, opts.SelfAuthenticating)
	}
	return mcptransport.Guarded(inner, opts), closeSessions
}

// adminIdentity tells next that a request came with auth_token: past
// Guard, every request but the self-authenticating ones (selfAuth, the
// profile paths, whose identity internal/clientauth puts in their context)
// has shown it. The call history and metrics name such calls "(admin)".
func adminIdentity(next http.Handler, selfAuth func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if selfAuth == nil || !selfAuth(r) {
			r = r.WithContext(clientauth.WithIdentity(r.Context(), clientauth.Identity{Admin: true}))
		}
		next.ServeHTTP(w, r)
	})
}
