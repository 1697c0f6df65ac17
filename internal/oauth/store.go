package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
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

// Record is everything stored for one server: one file,
// <dir>/<server>.json, mode 0600.
type Record struct {
	ServerURL    string        `json:"server_url"`
	Resource     string        `json:"resource,omitempty"`
	Registration *Registration `json:"registration,omitempty"`
	Token        *Token        `json:"token,omitempty"`
	// Granted is the scopes asked for when the token was obtained.
	Granted []string  `json:"granted_scopes,omitempty"`
	Updated time.Time `json:"updated"`
}

// store reads and writes one server's record.
type store struct {
	path string
}

// load reads the record; a missing file is (nil, nil).
func (s store) load() (*Record, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.path, err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding %s: %w (delete it and sign in again)", s.path, err)
	}
	return &r, nil
}

// save writes the record atomically (atomicfile: 0600, in a 0700
// directory, fsynced).
func (s store) save(r *Record) error {
	r.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(s.path, data, atomicfile.Options{}); err != nil {
		return fmt.Errorf("saving tokens: %w", err)
	}
	return nil
}

// stamp identifies the file's current version (zero when absent), so a
// record written by another process (mcproxy auth login) is noticed.
func (s store) stamp() time.Time {
	st, err := os.Stat(s.path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime().Add(time.Duration(st.Size()))
}

// remove deletes the record; a missing one is not an error.
func (s store) remove() error {
	err := os.Remove(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
