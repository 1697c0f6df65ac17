package clienttoken

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// A created token checks, is bound to its profiles, and its value is
// nowhere in the file, which only its owner can read.
func TestCreateCheck(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	value, tok, err := s.Create(context.Background(), "review-bot", []string{"review"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(value, Prefix) || len(value) < len(Prefix)+40 {
		t.Fatalf("value %q: want %s and 32 random bytes", value, Prefix)
	}
	got, err := s.Check(value)
	if err != nil || got.Name != "review-bot" || !got.Allows("review") || got.Allows("desk") {
		t.Fatalf("Check = %+v, %v", got, err)
	}
	if tok.Hash == "" || strings.Contains(tok.Hash, value) {
		t.Errorf("token record %+v", tok)
	}
	data, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), value) || strings.Contains(string(data), strings.TrimPrefix(value, Prefix)) {
		t.Errorf("the token's value is in %s:\n%s", s.Path(), data)
	}
	fi, _ := os.Stat(s.Path())
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", s.Path(), fi.Mode().Perm())
	}
	for _, bad := range []string{"", "nope", Prefix + "AAAA", value + "x", strings.TrimPrefix(value, Prefix)} {
		if _, err := s.Check(bad); !errors.Is(err, ErrUnknown) {
			t.Errorf("Check(%q) = %v, want ErrUnknown", bad, err)
		}
	}
	if _, _, err := s.Create(context.Background(), "review-bot", []string{"review"}, time.Time{}); !errors.Is(err, ErrNameTaken) {
		t.Errorf("a second token with the same name: %v", err)
	}
	if _, _, err := s.Create(context.Background(), "x", nil, time.Time{}); err == nil || !strings.Contains(err.Error(), "--profile") {
		t.Errorf("a token with no profile: %v", err)
	}
}

// A token revoked by another process (another File on the same dir, as
// `mcproxy tokens revoke` is) stops working in a watching process within
// a second; one created there starts working.
func TestRevokeSeenByWatcher(t *testing.T) {
	dir := t.TempDir()
	server, err := Open(dir, Options{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := server.Watch(ctx)
	defer func() { cancel(); <-done }()

	cli, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := cli.Create(ctx, "a", []string{"p"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := cli.Create(ctx, "b", []string{"p"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the created tokens to be seen", func() bool {
		_, ea := server.Check(a)
		_, eb := server.Check(b)
		return ea == nil && eb == nil
	})
	// A fresh CLI process: it must keep both tokens while revoking one.
	cli2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cli2.Revoke(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revocation to be seen", func() bool {
		_, err := server.Check(a)
		return errors.Is(err, ErrUnknown)
	})
	if d := time.Since(start); d > time.Second {
		t.Errorf("revocation seen after %v, want within a second", d)
	}
	if _, err := server.Check(b); err != nil {
		t.Errorf("the other token stopped working: %v", err)
	}
	if err := cli2.Revoke(ctx, "a"); !errors.Is(err, ErrNoSuchName) {
		t.Errorf("revoking twice: %v", err)
	}
	list, err := cli.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "b" {
		t.Errorf("List = %+v, %v", list, err)
	}
}

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := now
	s, err := Open(t.TempDir(), Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := ParseExpiry("30d", now)
	if err != nil || !exp.Equal(now.Add(30*24*time.Hour)) {
		t.Fatalf("ParseExpiry(30d) = %v, %v", exp, err)
	}
	v, _, err := s.Create(context.Background(), "t", []string{"p"}, exp)
	if err != nil {
		t.Fatal(err)
	}
	clock = exp.Add(-time.Second)
	if _, err := s.Check(v); err != nil {
		t.Errorf("a second before expiry: %v", err)
	}
	clock = exp
	if tok, err := s.Check(v); !errors.Is(err, ErrExpired) || tok.Name != "t" {
		t.Errorf("at expiry: %+v, %v; want ErrExpired naming the token", tok, err)
	}
}

func TestParseExpiry(t *testing.T) {
	now := time.Unix(0, 0)
	for in, want := range map[string]time.Duration{"": 0, "never": 0, "1d": 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute} {
		got, err := ParseExpiry(in, now)
		if err != nil || (want == 0) != got.IsZero() || want != 0 && got.Sub(now) != want {
			t.Errorf("ParseExpiry(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"0d", "-1d", "d", "1.5d", "soon", "-2h", "0s"} {
		if _, err := ParseExpiry(in, now); err == nil || !strings.Contains(err.Error(), "--expires") {
			t.Errorf("ParseExpiry(%q): %v, want an error naming --expires", in, err)
		}
	}
}

// A corrupt file keeps the tokens last loaded and says how to fix it.
func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	s, _ := Open(dir, Options{})
	v, _, _ := s.Create(context.Background(), "t", []string{"p"}, time.Time{})
	if err := os.WriteFile(s.Path(), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "fix or remove the file") {
		t.Errorf("Open on a corrupt file: %v", err)
	}
	if _, err := s.List(context.Background()); err == nil {
		t.Error("List on a corrupt file succeeded")
	}
	if _, err := s.Check(v); err != nil {
		t.Errorf("the token last loaded stopped working: %v", err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
