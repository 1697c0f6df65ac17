package main

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/pgstore"
)

// storeOpenTimeout bounds connecting to the shared store and migrating its
// schema at start.
const storeOpenTimeout = 30 * time.Second

// storeMaxConns bounds a replica's connections to the shared store.
const storeMaxConns = 32

// openSharedStore opens the PostgreSQL store of cfg.Store (issue 32), or
// returns nil when the state is kept in files (no store configured). The
// DSN is never logged: the log and errors name the server by host and
// database only.
func openSharedStore(cfg *config.Config, log *zap.Logger) (*pgstore.Store, error) {
	if !cfg.Store.Shared() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	// Each gateway turn in progress holds a connection for its
	// conversation's lock, beside those its statements take.
	s, err := pgstore.Open(ctx, cfg.Store.Postgres, pgstore.Options{Logger: log.Named("store"), MaxConns: storeMaxConns})
	if err != nil {
		return nil, &config.FieldError{Path: "store.postgres", Message: err.Error()}
	}
	log.Info("shared state in PostgreSQL: approvals, learned words, protocol revisions, MCP client sessions, the gateway's conversations and their sessions",
		zap.String("store", pgstore.Redact(cfg.Store.Postgres)), zap.Ints("migrations_applied", s.Applied()))
	return s, nil
}

// clientSessions is where the MCP front's streamable HTTP sessions are
// shared with other replicas: the store's, or nil (this process only).
func clientSessions(shared *pgstore.Store, cfg *config.Config) mcptransport.SessionStore {
	if shared == nil {
		return nil
	}
	idle := cfg.SessionIdleTimeout.Std()
	if idle <= 0 {
		idle = config.DefaultSessionIdleTimeout
	}
	return shared.ClientSessions(idle)
}
