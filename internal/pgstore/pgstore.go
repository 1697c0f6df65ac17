// Package pgstore keeps the state that mcproxy replicas share in one
// PostgreSQL database (issue 32): the tool approvals, the learned words,
// the negotiated protocol revisions, the gateway's sessions and its
// conversation index, the client tokens (their hashes), behind the
// interfaces of the packages that use them (integrity.Backend,
// learn.Backend, upstream.RevisionStore, session.Store, gateway.Index,
// clienttoken.Store), and locks that hold across replicas
// (Lock, LockConversation). It owns the schema: versioned
// SQL migrations (migrations/), applied at Open under an advisory lock so
// that replicas starting at once migrate once.
//
// The DSN carries the password: it never reaches a log or an error (errors
// name the server by host and database only).
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/goroutine"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Options tune a Store.
type Options struct {
	// Logger receives the migrations applied and the listener's failures.
	// nil = no logging.
	Logger *zap.Logger
	// Timeout bounds each statement of the methods that take no context
	// (the interfaces of integrity, learn and upstream). Zero =
	// DefaultTimeout.
	Timeout time.Duration
	// MaxConns bounds the connection pool (the config's
	// store.max_connections). Lock holds one of them until unlock; it may
	// hold all but LockReserve(MaxConns), which are kept for statements
	// and the listener. Zero = DefaultMaxConns; at least MinMaxConns.
	MaxConns int32
}

// MinMaxConns is the smallest pool: the listener, two statements, one lock.
const MinMaxConns = 4

// LockReserve is how many of a pool of maxConns connections Lock leaves to
// statements and the listener: a quarter, at least three.
func LockReserve(maxConns int32) int32 { return max(3, maxConns/4) }

// LocksExhaustedError is Lock's answer when every connection Lock may use
// has been held by other locks for the whole wait: more gateway turns are
// in progress on this replica at once than its pool allows.
type LocksExhaustedError struct {
	// Held is how many locks this replica holds (its lock budget);
	// MaxConns the pool's size.
	Held, MaxConns int32
	// Waited is how long Lock waited for one to be released.
	Waited time.Duration
}

func (e *LocksExhaustedError) Error() string {
	return fmt.Sprintf("all %d connections this replica may hold locks on are held (gateway turns in progress; store.max_connections is %d, of which %d are kept for statements), none released within %s: raise store.max_connections (and the database's max_connections to match), or spread the clients over more replicas",
		e.Held, e.MaxConns, e.MaxConns-e.Held, e.Waited)
}

// Defaults of Options.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultMaxConns = 8
)

// The documents' names (table documents).
const (
	docApprovals = "approvals"
	docLearned   = "learned"
	docRevisions = "revisions"
)

// The LISTEN/NOTIFY channels: approval changes, client token changes.
const (
	approvalsChannel = "mcproxy_approvals"
	tokensChannel    = "mcproxy_tokens"
)

// migrateLockKey is the advisory lock held while migrating ("mcproxy" in
// ASCII), one key for every mcproxy database.
const migrateLockKey int64 = 0x6d6370726f7879

// Store is an open shared store. Its methods are safe for concurrent use.
// Close stops its listener and closes its connections.
type Store struct {
	pool    *pgxpool.Pool
	dsn     string
	where   string // host and database, for errors
	opts    Options
	log     *zap.Logger
	applied []int         // the migrations this Open applied
	locks   chan struct{} // one token per lock held; its capacity is Lock's budget

	cancel   context.CancelFunc
	listened <-chan struct{} // closed once the listener has stopped
	changes  chan struct{}   // approvals changed (capacity 1)
	tokens   chan struct{}   // client tokens changed (capacity 1)

	mu      sync.Mutex
	stamps  map[string]string // last stamp read per document, for errors
	started chan struct{}     // closed once the listener listens, or its first try failed
}

// Redact is dsn as errors and logs may show it: scheme, host, port and
// database, without the user, password or parameters. A DSN that is not a
// URL shows as "the configured PostgreSQL server".
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return "the configured PostgreSQL server"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// Open connects to dsn, applies the migrations it has not seen yet and
// starts listening for approval changes.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	opts.MaxConns = max(opts.MaxConns, MinMaxConns)
	where := Redact(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the DSN: say only what to fix.
		return nil, fmt.Errorf("store.postgres is not a valid PostgreSQL DSN (want postgres://user:password@host:5432/database)")
	}
	cfg.MaxConns = opts.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", where, scrub(err, dsn))
	}
	s := &Store{pool: pool, dsn: dsn, where: where, opts: opts, log: opts.Logger,
		locks:   make(chan struct{}, opts.MaxConns-LockReserve(opts.MaxConns)),
		changes: make(chan struct{}, 1), tokens: make(chan struct{}, 1), stamps: map[string]string{}, started: make(chan struct{})}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to %s: %w", where, scrub(err, dsn))
	}
	if s.applied, err = s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.listened = goroutine.Go(s.log, "pgstore approvals listener", func() { s.listen(lctx) })
	select {
	case <-s.started:
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
	return s, nil
}

// scrub keeps the DSN's password out of err's text.
func scrub(err error, dsn string) error {
	u, perr := url.Parse(dsn)
	if perr != nil || u.User == nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, "***"))
}

// Close stops the listener and closes the pool. It waits for the locks
// taken with Lock to be released.
func (s *Store) Close() {
	s.cancel()
	<-s.listened
	s.pool.Close()
}

// Applied lists the migrations (their numbers) that this Open applied;
// empty when the schema was current already.
func (s *Store) Applied() []int { return slices.Clone(s.applied) }

// migration is one file of migrations/: NNNN_what.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, n := range names {
		base := strings.TrimPrefix(n, "migrations/")
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: its name must start with a number", base)
		}
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, base, string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// migrate applies the migrations the database lacks, each in a
// transaction with its row in schema_migrations, under an advisory lock:
// a second replica starting at once waits, then finds them applied.
func (s *Store) migrate(ctx context.Context) ([]int, error) {
	all, err := migrations()
	if err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", s.where, scrub(err, s.dsn))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("taking the migration lock on %s: %w", s.where, err)
	}
	defer func() {
		// A lost unlock would hold every later start: end the session then.
		if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrateLockKey); err != nil {
			_ = conn.Hijack().Close(context.Background())
		}
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("creating schema_migrations on %s: %w", s.where, err)
	}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations on %s: %w", s.where, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations on %s: %w", s.where, err)
	}
	if len(have) > 0 && slices.Max(have) > all[len(all)-1].version {
		return nil, fmt.Errorf("the schema of %s is at migration %d, newer than this mcproxy knows (%d): upgrade mcproxy", s.where, slices.Max(have), all[len(all)-1].version)
	}
	var applied []int
	for _, m := range all {
		if slices.Contains(have, m.version) {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("applying migration %s to %s: %w", m.name, s.where, err)
		}
		s.log.Info("applied a schema migration", zap.String("migration", m.name))
		applied = append(applied, m.version)
	}
	return applied, nil
}

// listen holds a connection that LISTENs on approvalsChannel and
// tokensChannel and forwards each notification to changes or tokens, until
// ctx ends; a lost connection is made again after a pause, and a change of
// both signalled then, since one may have been missed.
//
// Open waits for the first attempt: until it listens, or until it failed
// (then the poll covers the approvals until a later attempt listens).
func (s *Store) listen(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, &first)
		if first {
			first = false
			close(s.started)
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("the approvals listener lost its connection; connecting again", zap.String("store", s.where), zap.Error(scrub(err, s.dsn)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		signal(s.changes)
		signal(s.tokens)
	}
}

func (s *Store) listenOnce(ctx context.Context, first *bool) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+approvalsChannel+"; LISTEN "+tokensChannel); err != nil {
		return err
	}
	// A released connection goes back to the pool: it must not keep
	// listening for the next user.
	defer func() { _, _ = conn.Exec(context.Background(), "UNLISTEN *") }()
	if *first {
		*first = false
		close(s.started)
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case approvalsChannel:
			signal(s.changes)
		case tokensChannel:
			signal(s.tokens)
		}
	}
}

// signal tells ch's reader of a change without waiting: one pending
// signal covers any number of changes.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Lock takes the lock named key, held across every replica of this
// database (a PostgreSQL advisory lock on a connection of its own), waiting
// until it is free or ctx ends. unlock releases it; a replica that dies
// loses its connection and so its locks.
//
// The lock holds its pooled connection until unlock: a session-level
// advisory lock lives and dies with its session, which is what frees a
// dead replica's locks, and one connection shared by many locks would drop
// them all, unseen, when it broke. So that locks never starve statements,
// they may hold only MaxConns - LockReserve(MaxConns) connections; past
// that, Lock waits up to Timeout for one to be released, then fails with
// *LocksExhaustedError, which names the limit.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), err error) {
	if err := s.lockSlot(ctx); err != nil {
		return nil, fmt.Errorf("taking lock %q on %s: %w", key, s.where, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		<-s.locks
		return nil, fmt.Errorf("taking lock %q on %s: %w", key, s.where, scrub(err, s.dsn))
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey(key)); err != nil {
		// A cancelled wait may leave the session unsure: do not reuse it.
		_ = conn.Hijack().Close(context.Background())
		<-s.locks
		return nil, fmt.Errorf("taking lock %q on %s: %w", key, s.where, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			defer func() { <-s.locks }()
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
			defer cancel()
			if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", lockKey(key)); err != nil {
				_ = conn.Hijack().Close(context.Background())
				return
			}
			conn.Release()
		})
	}, nil
}

// lockSlot takes one of the connections locks may hold, waiting up to
// Timeout (or until ctx ends) for another lock to release one.
func (s *Store) lockSlot(ctx context.Context) error {
	select {
	case s.locks <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.opts.Timeout)
	defer t.Stop()
	select {
	case s.locks <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return &LocksExhaustedError{Held: int32(cap(s.locks)), MaxConns: s.opts.MaxConns, Waited: s.opts.Timeout}
	}
}

// lockKey maps a lock's name to an advisory lock key. Names are kept apart
// from the migration lock by a prefix.
func lockKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte("mcproxy lock\x00" + key))
	return int64(h.Sum64())
}

// loadDoc returns document name and its version; nil and 0 when absent.
func (s *Store) loadDoc(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name string, forUpdate bool) ([]byte, int64, error) {
	sql := "SELECT body, version FROM documents WHERE name = $1"
	if forUpdate {
		sql += " FOR UPDATE"
	}
	var body []byte
	var version int64
	err := q.QueryRow(ctx, sql, name).Scan(&body, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s from %s: %w", name, s.where, err)
	}
	return body, version, nil
}

// saveDoc writes document name, one version up; channel, when not empty,
// is notified once the transaction commits.
func (s *Store) saveDoc(ctx context.Context, tx pgx.Tx, name string, body []byte, channel string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO documents (name, body) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, version = documents.version + 1`, name, body); err != nil {
		return fmt.Errorf("writing %s to %s: %w", name, s.where, err)
	}
	if channel != "" {
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", channel, name); err != nil {
			return fmt.Errorf("notifying %s of %s: %w", s.where, name, err)
		}
	}
	return nil
}

// stamp is document name's version as text ("" when absent). A failed
// read returns the last stamp read, so a passing outage is not news.
func (s *Store) stamp(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	var version int64
	err := s.pool.QueryRow(ctx, "SELECT version FROM documents WHERE name = $1", name).Scan(&version)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		s.stamps[name] = ""
	case err != nil:
		s.log.Warn("reading a shared document's version", zap.String("document", name), zap.String("store", s.where), zap.Error(err))
	default:
		s.stamps[name] = strconv.FormatInt(version, 10)
	}
	return s.stamps[name]
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}
