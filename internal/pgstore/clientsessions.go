package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ClientSessions is the MCP client sessions (streamable HTTP) replicas
// share, for mcptransport.HTTPOptions.Sessions: a session unseen for idle
// is gone for every replica, and its row is pruned when a new session is
// saved.
func (s *Store) ClientSessions(idle time.Duration) *ClientSessions {
	return &ClientSessions{s: s, idle: idle}
}

// ClientSessions implements mcptransport.SessionStore on the store.
type ClientSessions struct {
	s    *Store
	idle time.Duration
}

// SaveSession records a new session and prunes those idle for longer than
// the idle timeout.
func (c *ClientSessions) SaveSession(ctx context.Context, id, owner string, initialize []byte) error {
	err := pgx.BeginFunc(ctx, c.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM client_sessions WHERE last_seen < now() - $1::float8 * interval '1 second'", c.idle.Seconds()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO client_sessions (id, owner, initialize) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, initialize = EXCLUDED.initialize, last_seen = now()`, id, owner, initialize)
		return err
	})
	if err != nil {
		return fmt.Errorf("saving client session %s on %s: %w", id, c.s.where, scrub(err, c.s.dsn))
	}
	return nil
}

// LoadSession returns session id unless it is unknown or idle for longer
// than the idle timeout.
func (c *ClientSessions) LoadSession(ctx context.Context, id string) (owner string, initialize []byte, logLevel string, ok bool, err error) {
	err = c.s.pool.QueryRow(ctx, "SELECT owner, initialize, log_level FROM client_sessions WHERE id = $1 AND last_seen >= now() - $2::float8 * interval '1 second'",
		id, c.idle.Seconds()).Scan(&owner, &initialize, &logLevel)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, "", false, nil
	}
	if err != nil {
		return "", nil, "", false, fmt.Errorf("reading client session %s from %s: %w", id, c.s.where, scrub(err, c.s.dsn))
	}
	return owner, initialize, logLevel, true, nil
}

// SetLogLevel records the session's log level (logging/setLevel).
func (c *ClientSessions) SetLogLevel(ctx context.Context, id, level string) error {
	if _, err := c.s.pool.Exec(ctx, "UPDATE client_sessions SET log_level = $2, last_seen = now() WHERE id = $1", id, level); err != nil {
		return fmt.Errorf("setting client session %s's log level on %s: %w", id, c.s.where, scrub(err, c.s.dsn))
	}
	return nil
}

// TouchSession records a request of session id now.
func (c *ClientSessions) TouchSession(ctx context.Context, id string) error {
	if _, err := c.s.pool.Exec(ctx, "UPDATE client_sessions SET last_seen = now() WHERE id = $1", id); err != nil {
		return fmt.Errorf("touching client session %s on %s: %w", id, c.s.where, scrub(err, c.s.dsn))
	}
	return nil
}

// DeleteSession ends session id for every replica.
func (c *ClientSessions) DeleteSession(ctx context.Context, id string) error {
	if _, err := c.s.pool.Exec(ctx, "DELETE FROM client_sessions WHERE id = $1", id); err != nil {
		return fmt.Errorf("deleting client session %s from %s: %w", id, c.s.where, scrub(err, c.s.dsn))
	}
	return nil
}
