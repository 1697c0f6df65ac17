package main

import (
	"fmt"
	"net"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
)

// checkBinding refuses an HTTP listen address beyond loopback without
// auth_token: the Host/Origin guard stops browsers (DNS rebinding), not
// other clients, which set Host to whatever they like, so on a reachable
// address the token is the only barrier between the network and every
// configured MCP server.
func checkBinding(cfg *config.Config) error {
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	if mcptransport.IsLoopback(host) || cfg.AuthToken != "" {
		return nil
	}
	return fmt.Errorf("listen %q reaches beyond this machine and no auth_token is set: anyone who can reach it could use every configured MCP server. "+
		"Set \"auth_token\" in the config (clients send it as \"Authorization: Bearer <token>\"), or listen on 127.0.0.1", cfg.Listen)
}

// httpOptions are the HTTP front's options from cfg.
func httpOptions(cfg *config.Config) mcptransport.HTTPOptions {
	host, _, _ := net.SplitHostPort(cfg.Listen)
	return mcptransport.HTTPOptions{
		AuthToken:          cfg.AuthToken,
		ListenHost:         host,
		AllowedHosts:       cfg.AllowedHosts,
		SessionIdleTimeout: cfg.SessionIdleTimeout.Std(),
		Limits: mcptransport.Limits{
			MaxBatch:        cfg.Limits.MaxBatch,
			MaxRequestBytes: cfg.Limits.MaxRequestBytes,
			ReadTimeout:     time.Duration(cfg.Limits.ReadTimeout),
			MaxSessions:     cfg.Limits.MaxSessions,
		},
	}
}
