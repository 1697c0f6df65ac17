// Package clienttoken owns mcproxy's client tokens: bearer tokens, each
// with a name and bound to one or more profiles, that `mcproxy tokens`
// creates, lists and revokes and the front checks on every request. A
// token's value is shown once, when it is created; the store keeps only
// its SHA-256 (a token is 32 random bytes, so a plain hash is as strong as
// a slow one) and its name is what logs, history and metrics show.
//
// Store is the interface the front and the command use; File keeps the
// tokens in <data_dir>/tokens.json (0600, replaced atomically). A running
// mcproxy sees another process's create or revoke through Watch, which
// polls the file (its identity, size and modification time). Every change
// is a read-modify-write under an exclusive lock on tokens.json.lock
// (internal/filelock), so processes creating or revoking tokens at once
// keep each other's changes. Replicas sharing a PostgreSQL database keep
// their tokens there instead (internal/pgstore's Tokens); New, Hash and
// Find are what both stores share.
package clienttoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/filelock"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// Prefix starts every token value, so a leaked one is recognisable (and
// redactable) as mcproxy's.
const Prefix = "mcpt_"

// FileName is the store's file in the data dir.
const FileName = "tokens.json"

// DefaultPollInterval is how often Watch looks at the file: a revocation
// takes effect within it.
const DefaultPollInterval = 250 * time.Millisecond

// Errors of Check and Revoke. A caller answering a client must not say
// which of the first two it was beyond "invalid" vs "expired".
var (
	// ErrUnknown: no token has that value (never created, or revoked).
	ErrUnknown = errors.New("unknown or revoked client token")
	// ErrExpired: the token exists but its expiry has passed.
	ErrExpired = errors.New("client token expired")
	// ErrNoSuchName: Revoke was given a name no token has.
	ErrNoSuchName = errors.New("no client token has that name")
	// ErrNameTaken: Create was given a name a token already has.
	ErrNameTaken = errors.New("a client token already has that name")
)

// Token is what the store knows of one token: never its value.
type Token struct {
	// Name identifies the token in lists, logs and history.
	Name string `json:"name"`
	// Profiles are the profiles the token may use.
	Profiles []string `json:"profiles"`
	// Hash is the hex SHA-256 of the token's value.
	Hash string `json:"sha256"`
	// Created is when it was created.
	Created time.Time `json:"created"`
	// Expires is when it stops working; zero means never.
	Expires time.Time `json:"expires,omitzero"`
}

// Expired reports whether t has expired at now.
func (t Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// Allows reports whether t may use the profile called name.
func (t Token) Allows(profile string) bool { return slices.Contains(t.Profiles, profile) }

// Store keeps client tokens: File here, and internal/pgstore's for
// replicas sharing a database (issue 32).
type Store interface {
	// Create makes a token called name for profiles, expiring at expires
	// (zero: never), and returns its value, which nothing keeps.
	Create(ctx context.Context, name string, profiles []string, expires time.Time) (value string, t Token, err error)
	// List returns every token, by name.
	List(ctx context.Context) ([]Token, error)
	// Revoke deletes the token called name.
	Revoke(ctx context.Context, name string) error
	// Check returns the token whose value is value, ErrUnknown or
	// ErrExpired.
	Check(value string) (Token, error)
}

// Options tune a File. The zero value polls every DefaultPollInterval,
// reads the real clock and logs nothing.
type Options struct {
	// Log receives reload failures; nil means no logging.
	Log *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PollInterval is how often Watch looks at the file; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
}

// File is a Store in one JSON file.
type File struct {
	path string
	opts Options

	mu     sync.Mutex
	byHash map[string]Token
	seen   os.FileInfo // the file as last loaded; nil when absent
}

type fileData struct {
	Tokens []Token `json:"tokens"`
}

// Open returns the store in dir (the data dir), loading its file if there
// is one.
func Open(dir string, opts Options) (*File, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	f := &File{path: filepath.Join(dir, FileName), opts: opts, byHash: map[string]Token{}}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reloadLocked(true); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the store's file.
func (f *File) Path() string { return f.path }

// Watch reloads the file whenever it changes (another process's create or
// revoke) until ctx ends; the channel is closed when it has stopped. A
// file that cannot be read keeps the tokens last loaded, except that a
// removed file revokes them all.
func (f *File) Watch(ctx context.Context) <-chan struct{} {
	return goroutine.Loop(ctx, f.opts.Log, "clienttoken.watch", f.opts.PollInterval, func(time.Time) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if err := f.reloadLocked(false); err != nil {
			f.opts.Log.Warn("client tokens: keeping the tokens last loaded", zap.Error(err))
		}
	})
}

// reloadLocked reads the file if it changed since it was last read (or
// always, when force is true).
func (f *File) reloadLocked(force bool) error {
	fi, err := os.Stat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		f.byHash, f.seen = map[string]Token{}, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading client tokens: %w", err)
	}
	if !force && f.seen != nil && os.SameFile(f.seen, fi) && fi.ModTime().Equal(f.seen.ModTime()) && fi.Size() == f.seen.Size() {
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("reading client tokens: %w", err)
	}
	var d fileData
	if err := json.Unmarshal(data, &d); err != nil {
		return fmt.Errorf("reading client tokens from %s: %w (fix or remove the file; `mcproxy tokens create` writes a new one)", f.path, err)
	}
	byHash := make(map[string]Token, len(d.Tokens))
	for _, t := range d.Tokens {
		byHash[t.Hash] = t
	}
	f.byHash, f.seen = byHash, fi
	return nil
}

// lockWait bounds how long Create and Revoke wait for another process's
// change of the file.
const lockWait = 10 * time.Second

// lockFile takes the lock every change of the file is made under
// (<file>.lock, internal/filelock), so that two processes creating or
// revoking tokens at once (two `mcproxy tokens` commands, or one and a
// serving mcproxy) never lose each other's writes: each rereads the file
// under the lock before writing it.
func (f *File) lockFile(ctx context.Context) (func(), error) {
	ctx, cancel := context.WithTimeoutCause(ctx, lockWait, fmt.Errorf("another process has held %s.lock for over %s (a mcproxy tokens command still running?)", f.path, lockWait))
	defer cancel()
	return filelock.Lock(ctx, f.path+".lock")
}

// writeLocked replaces the file with the tokens held.
func (f *File) writeLocked() error {
	d := fileData{Tokens: Sorted(f.byHash)}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding client tokens: %w", err)
	}
	if err := atomicfile.WriteFile(f.path, append(data, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("writing client tokens: %w", err)
	}
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("writing client tokens: %w", err)
	}
	f.seen = fi
	return nil
}

// New makes a token called name for profiles, expiring at expires (zero:
// never), created at now: its value, shown once, and what a store keeps of
// it. It checks the name and profiles, so every Store refuses the same.
func New(name string, profiles []string, expires, now time.Time) (value string, t Token, err error) {
	// Parentheses are kept for the labels of callers that are no token
	// ("(admin)", "(anonymous)") in the call history and metrics.
	if name == "" || strings.ContainsAny(name, " \t\r\n()") {
		return "", Token{}, fmt.Errorf("creating client token: name %q must be non-empty, without spaces or parentheses", name)
	}
	if len(profiles) == 0 {
		return "", Token{}, fmt.Errorf("creating client token %s: give at least one profile (--profile NAME)", name)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("creating client token %s: %w", name, err)
	}
	value = Prefix + base64.RawURLEncoding.EncodeToString(raw[:])
	t = Token{Name: name, Profiles: slices.Clone(profiles), Hash: Hash(value), Created: now.UTC().Truncate(time.Second), Expires: expires.UTC()}
	return value, t, nil
}

// Find is Check over byHash (tokens by Hash) at now: the token whose value
// is value, ErrUnknown or ErrExpired.
func Find(byHash map[string]Token, value string, now time.Time) (Token, error) {
	if !strings.HasPrefix(value, Prefix) {
		return Token{}, ErrUnknown
	}
	t, ok := byHash[Hash(value)]
	if !ok {
		return Token{}, ErrUnknown
	}
	if t.Expired(now) {
		return t, ErrExpired
	}
	return t, nil
}

// Create implements Store. It rereads the file first, so a token another
// process created in the meantime is kept.
func (f *File) Create(ctx context.Context, name string, profiles []string, expires time.Time) (string, Token, error) {
	value, t, err := New(name, profiles, expires, f.opts.Now())
	if err != nil {
		return "", Token{}, err
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := f.lockFile(ctx)
	if err != nil {
		return "", Token{}, fmt.Errorf("creating client token %s: %w", name, err)
	}
	defer unlock()
	if err := f.reloadLocked(true); err != nil {
		return "", Token{}, err
	}
	for _, o := range f.byHash {
		if o.Name == name {
			return "", Token{}, fmt.Errorf("creating client token %s: %w (revoke it first, or choose another name)", name, ErrNameTaken)
		}
	}
	f.byHash[t.Hash] = t
	if err := f.writeLocked(); err != nil {
		delete(f.byHash, t.Hash)
		return "", Token{}, err
	}
	return value, t, nil
}

// List implements Store.
func (f *File) List(context.Context) ([]Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.reloadLocked(false); err != nil {
		return nil, err
	}
	return Sorted(f.byHash), nil
}

// Sorted is the tokens of byHash by name.
func Sorted(byHash map[string]Token) []Token {
	out := make([]Token, 0, len(byHash))
	for _, t := range byHash {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Revoke implements Store.
func (f *File) Revoke(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := f.lockFile(ctx)
	if err != nil {
		return fmt.Errorf("revoking client token %s: %w", name, err)
	}
	defer unlock()
	if err := f.reloadLocked(true); err != nil {
		return err
	}
	for h, t := range f.byHash {
		if t.Name == name {
			delete(f.byHash, h)
			if err := f.writeLocked(); err != nil {
				f.byHash[h] = t
				return err
			}
			return nil
		}
	}
	return fmt.Errorf("revoking client token %s: %w (see `mcproxy tokens list`)", name, ErrNoSuchName)
}

// Check implements Store. It reads only what was loaded (Watch keeps that
// current), so it costs no I/O.
func (f *File) Check(value string) (Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Find(f.byHash, value, f.opts.Now())
}

// Hash is what a store keeps of a token's value: its hex SHA-256.
func Hash(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// ParseExpiry turns a --expires value into a time after now: a number of
// days ("30d") or a Go duration ("12h"); "" or "never" means no expiry.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	switch s {
	case "", "never":
		return time.Time{}, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != days {
			return time.Time{}, fmt.Errorf("--expires %q: want a number of days (30d), a duration (12h) or never", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("--expires %q: want a number of days (30d), a duration (12h) or never", s)
		}
	}
	return now.Add(d), nil
}
