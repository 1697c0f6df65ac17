package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/filelock"
)

// Token is an access token and what came with it. It is never logged:
// only its expiry, scopes and whether a refresh token exists are shown.
type Token struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
}

// Registration is the client's identity at one authorization server.
type Registration struct {
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"token_endpoint_auth_method,omitempty"`
	RedirectURI  string `json:"redirect_uri,omitempty"`
	// Dynamic is true when mcproxy registered itself (RFC 7591); such a
	// registration is redone when the redirect URI has to change.
	Dynamic bool `json:"dynamic,omitempty"`
}

// Record is everything stored for one server (in a Store).
type Record struct {
	ServerURL    string        `json:"server_url"`
	Resource     string        `json:"resource,omitempty"`
	Registration *Registration `json:"registration,omitempty"`
	Token        *Token        `json:"token,omitempty"`
	// Granted is the scopes asked for when the token was obtained.
	Granted []string  `json:"granted_scopes,omitempty"`
	Updated time.Time `json:"updated"`
}

// Store keeps each server's Record where every process that signs in to
// it finds it: Files, one file per server (the default), or
// internal/pgstore's, which replicas share. A record holds tokens: a Store
// never puts them in a log or an error. Its methods are safe for
// concurrent use.
type Store interface {
	// Load returns server's record; nil (and no error) when none is stored.
	Load(server string) (*Record, error)
	// Save stores r as server's record.
	Save(server string, r *Record) error
	// Remove deletes server's record; a missing one is not an error.
	Remove(server string) error
	// Stamp identifies the current version of server's record, so that a
	// record another process stored or removed is noticed; "" when none
	// was stored.
	Stamp(server string) string
	// Lock takes server's refresh lock, held against every process that
	// shares the store, waiting until it is free or ctx ends. Refreshes
	// take it, so that a rotating refresh token is spent once.
	Lock(ctx context.Context, server string) (unlock func(), err error)
}

// Files is the Store of directory Dir: <Dir>/<server>.json, mode 0600, in
// a 0700 directory, replaced atomically; the refresh lock is an flock on
// <Dir>/<server>.json.lock.
type Files struct{ Dir string }

var _ Store = Files{}

func (f Files) path(server string) string { return filepath.Join(f.Dir, server+".json") }

// Load implements Store.
func (f Files) Load(server string) (*Record, error) {
	path := f.path(server)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w (delete it and sign in again)", path, err)
	}
	return &r, nil
}

// Save implements Store, writing the file atomically (atomicfile: 0600,
// in a 0700 directory, fsynced).
func (f Files) Save(server string, r *Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.path(server), data, atomicfile.Options{}); err != nil {
		return fmt.Errorf("saving tokens: %w", err)
	}
	return nil
}

// Stamp implements Store: the file's modification time and size.
func (f Files) Stamp(server string) string {
	st, err := os.Stat(f.path(server))
	if err != nil {
		return ""
	}
	return st.ModTime().Add(time.Duration(st.Size())).Format(time.RFC3339Nano)
}

// Remove implements Store.
func (f Files) Remove(server string) error {
	err := os.Remove(f.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Lock implements Store. Two mcproxy processes (one per client app, say)
// share a token file; the lock keeps them from spending one rotating
// refresh token twice.
func (f Files) Lock(ctx context.Context, server string) (func(), error) {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the token directory: %w", err)
	}
	return filelock.Lock(ctx, f.path(server)+".lock")
}
