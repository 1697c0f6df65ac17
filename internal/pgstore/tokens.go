package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// DefaultTokenPoll is how often Tokens.Watch rereads the tokens when no
// notification came: the fallback that bounds how long a revocation takes
// when a notification was lost.
const DefaultTokenPoll = time.Second

// TokenOptions tune Tokens. The zero value reads the real clock and polls
// every DefaultTokenPoll.
type TokenOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll is how often Watch rereads the tokens without a notification;
	// zero means DefaultTokenPoll.
	Poll time.Duration
}

// Tokens is the client tokens kept in the store (table client_tokens),
// a clienttoken.Store for replicas sharing the database. Create and Revoke
// write the table and, in the same transaction, notify every replica;
// Check reads the tokens last loaded (no I/O per request), which Watch
// keeps current: at once on a notification, and every Poll in case one was
// lost. Only a token's SHA-256 reaches the database.
//
// One Store's notifications go to one Tokens: make one per Store.
type Tokens struct {
	s    *Store
	opts TokenOptions

	loading sync.Mutex // held across a load, so an older read never replaces a newer one

	mu     sync.Mutex
	byHash map[string]clienttoken.Token
	loaded chan struct{} // closed at the next load, then replaced
}

var _ clienttoken.Store = (*Tokens)(nil)

// Tokens loads the client tokens kept in the store.
func (s *Store) Tokens(ctx context.Context, opts TokenOptions) (*Tokens, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultTokenPoll
	}
	t := &Tokens{s: s, opts: opts, loaded: make(chan struct{})}
	if err := t.load(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// Loaded is closed once the tokens have next been reloaded from the
// database (by Watch, Create or Revoke).
func (t *Tokens) Loaded() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.loaded
}

// load replaces the tokens held by the table's.
func (t *Tokens) load(ctx context.Context) error {
	t.loading.Lock()
	defer t.loading.Unlock()
	rows, err := t.s.pool.Query(ctx, "SELECT hash, name, profiles, created, expires FROM client_tokens")
	if err != nil {
		return fmt.Errorf("reading client tokens from %s: %w", t.s.where, err)
	}
	byHash := map[string]clienttoken.Token{}
	var tok clienttoken.Token
	var expires *time.Time
	_, err = pgx.ForEachRow(rows, []any{&tok.Hash, &tok.Name, &tok.Profiles, &tok.Created, &expires}, func() error {
		c := tok
		c.Created = c.Created.UTC()
		if expires != nil {
			c.Expires = expires.UTC()
		}
		byHash[c.Hash] = c
		tok, expires = clienttoken.Token{}, nil
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading client tokens from %s: %w", t.s.where, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byHash = byHash
	close(t.loaded)
	t.loaded = make(chan struct{})
	return nil
}

// Watch reloads the tokens whenever a replica (or `mcproxy tokens`)
// changes them, and every Poll, until ctx ends; the channel is closed when
// it has stopped. A failed read keeps the tokens last loaded.
func (t *Tokens) Watch(ctx context.Context) <-chan struct{} {
	return goroutine.Go(t.s.log, "pgstore client tokens watch", func() {
		tick := time.NewTicker(t.opts.Poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.s.tokens:
			case <-tick.C:
			}
			func() {
				defer goroutine.Recover(t.s.log, "pgstore client tokens watch", nil)
				lctx, cancel := t.s.ctx()
				defer cancel()
				if err := t.load(lctx); err != nil && ctx.Err() == nil {
					t.s.log.Warn("client tokens: keeping the tokens last loaded", zap.Error(err))
				}
			}()
		}
	})
}

// Create implements clienttoken.Store.
func (t *Tokens) Create(ctx context.Context, name string, profiles []string, expires time.Time) (string, clienttoken.Token, error) {
	value, tok, err := clienttoken.New(name, profiles, expires, t.opts.Now())
	if err != nil {
		return "", clienttoken.Token{}, err
	}
	var exp *time.Time
	if !tok.Expires.IsZero() {
		exp = &tok.Expires
	}
	err = pgx.BeginFunc(ctx, t.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO client_tokens (hash, name, profiles, created, expires) VALUES ($1, $2, $3, $4, $5)",
			tok.Hash, tok.Name, tok.Profiles, tok.Created, exp); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", tokensChannel)
		return err
	})
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "23505" { // unique_violation
		return "", clienttoken.Token{}, fmt.Errorf("creating client token %s: %w (revoke it first, or choose another name)", name, clienttoken.ErrNameTaken)
	}
	if err != nil {
		return "", clienttoken.Token{}, fmt.Errorf("creating client token %s in %s: %w", name, t.s.where, err)
	}
	t.reloadAfterWrite(ctx)
	return value, tok, nil
}

// reloadAfterWrite loads the tokens after this process changed them, so
// its own Check agrees at once; a failure is left to Watch.
func (t *Tokens) reloadAfterWrite(ctx context.Context) {
	if err := t.load(ctx); err != nil {
		t.s.log.Warn("client tokens: reloading after a change", zap.Error(err))
	}
}

// List implements clienttoken.Store: the tokens in the database now.
func (t *Tokens) List(ctx context.Context) ([]clienttoken.Token, error) {
	if err := t.load(ctx); err != nil {
		return nil, err
	}
	return clienttoken.Sorted(t.snapshot()), nil
}

func (t *Tokens) snapshot() map[string]clienttoken.Token {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byHash
}

// Revoke implements clienttoken.Store.
func (t *Tokens) Revoke(ctx context.Context, name string) error {
	var n int64
	err := pgx.BeginFunc(ctx, t.s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM client_tokens WHERE name = $1", name)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, '')", tokensChannel)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoking client token %s in %s: %w", name, t.s.where, err)
	}
	if n == 0 {
		return fmt.Errorf("revoking client token %s: %w (see `mcproxy tokens list`)", name, clienttoken.ErrNoSuchName)
	}
	t.reloadAfterWrite(ctx)
	return nil
}

// Check implements clienttoken.Store from the tokens last loaded.
func (t *Tokens) Check(value string) (clienttoken.Token, error) {
	return clienttoken.Find(t.snapshot(), value, t.opts.Now())
}
