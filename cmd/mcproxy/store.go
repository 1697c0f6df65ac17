package main

import (
	"context"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/mcptransport"
	"github.com/mcproxy/mcproxy/internal/oauth"
	"github.com/mcproxy/mcproxy/internal/pgstore"
)

// storeOpenTimeout bounds connecting to the shared store and migrating its
// schema at start.
const storeOpenTimeout = 30 * time.Second

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
	// conversation's lock, beside those its statements take
	// (store.max_connections).
	s, err := pgstore.Open(ctx, cfg.Store.Postgres, pgstore.Options{Logger: log.Named("store"), MaxConns: int32(cfg.Store.Connections())})
	if err != nil {
		return nil, &config.FieldError{Path: "store.postgres", Message: err.Error()}
	}
	log.Info("shared state in PostgreSQL: approvals, learned words, protocol revisions, MCP client sessions, the gateway's conversations and their sessions, client tokens, OAuth tokens of upstreams",
		zap.String("store", pgstore.Redact(cfg.Store.Postgres)), zap.Ints("migrations_applied", s.Applied()))
	return s, nil
}

// watchedTokens is a client token store that a serving mcproxy keeps
// current with Watch (clienttoken.File, pgstore.Tokens).
type watchedTokens interface {
	clienttoken.Store
	Watch(ctx context.Context) <-chan struct{}
}

// openTokens is the client tokens of cfg: shared's when a shared store is
// configured (every replica and `mcproxy tokens` then see the same), else
// <data_dir>/tokens.json.
func openTokens(cfg *config.Config, shared *pgstore.Store, log *zap.Logger) (watchedTokens, error) {
	if shared == nil {
		return clienttoken.Open(config.ExpandHome(cfg.DataDir), clienttoken.Options{Log: log})
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	t, err := shared.Tokens(ctx, pgstore.TokenOptions{})
	if err != nil {
		return nil, &config.FieldError{Path: "store.postgres", Message: err.Error()}
	}
	return t, nil
}

// oauthStore is where the upstreams' OAuth tokens are kept: shared's when
// a shared store is configured (one replica refreshes for all), else one
// file per server under <data_dir>/oauth. where names a server's record
// for messages.
func oauthStore(cfg *config.Config, shared *pgstore.Store) (st oauth.Store, where func(server string) string) {
	if shared != nil {
		return shared.OAuth(), func(string) string { return "the shared store " + pgstore.Redact(cfg.Store.Postgres) }
	}
	dir := oauth.Dir(config.ExpandHome(cfg.DataDir))
	return oauth.Files{Dir: dir}, func(server string) string { return filepath.Join(dir, server+".json") }
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
