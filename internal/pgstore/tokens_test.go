package pgstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// watchedTokens is the client tokens of s, watched until the test ends,
// polling only every hour: only a notification can tell it of a change in
// time.
func watchedTokens(t *testing.T, s *Store) *Tokens {
	t.Helper()
	tok, err := s.Tokens(context.Background(), TokenOptions{Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := tok.Watch(ctx)
	t.Cleanup(func() { cancel(); <-done })
	return tok
}

// within waits until cond holds, rechecking each time tok reloads, and
// returns how long after start that was; it fails the test past start +
// limit.
func within(t *testing.T, tok *Tokens, start time.Time, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	deadline := time.NewTimer(time.Until(start.Add(limit)))
	defer deadline.Stop()
	for {
		loaded := tok.Loaded() // before cond, so no reload is missed
		if cond() {
			return time.Since(start)
		}
		select {
		case <-loaded:
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, limit)
		}
	}
}

// TestTokenRevocationReachesOtherReplicas: two replicas on one database; a
// token created on one is accepted by the other, and once revoked on one
// is refused by the other within a second, by notification (its poll is
// an hour away). The database holds the token's hash, never its value.
func TestTokenRevocationReachesOtherReplicas(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	a, b := watchedTokens(t, open(t, dsn)), watchedTokens(t, open(t, dsn))
	ctx := context.Background()

	start := time.Now()
	value, tok, err := a.Create(ctx, "review-bot", []string{"review"}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Check(value); err != nil || got.Name != "review-bot" {
		t.Fatalf("Check on the creating replica = %+v, %v", got, err)
	}
	d := within(t, b, start, time.Second, "the token created on a accepted by b", func() bool {
		got, err := b.Check(value)
		return err == nil && got.Name == "review-bot" && got.Allows("review") && !got.Allows("desk")
	})
	t.Logf("created on a, accepted by b after %s", d)

	if _, _, err := b.Create(ctx, "review-bot", []string{"desk"}, time.Time{}); !errors.Is(err, clienttoken.ErrNameTaken) {
		t.Errorf("a second token called review-bot on b: got %v, want ErrNameTaken", err)
	}
	list, err := b.List(ctx)
	if err != nil || len(list) != 1 || list[0].Hash != tok.Hash || !list[0].Created.Equal(tok.Created) {
		t.Errorf("List on b = %+v, %v; want the one token %+v", list, err, tok)
	}

	var dump string
	if err := a.s.pool.QueryRow(ctx, "SELECT string_agg(t::text, ' ') FROM client_tokens t").Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, tok.Hash) || strings.Contains(dump, value) || strings.Contains(dump, strings.TrimPrefix(value, clienttoken.Prefix)) {
		t.Errorf("client_tokens holds %q: want the hash, never the value", dump)
	}

	start = time.Now()
	if err := a.Revoke(ctx, "review-bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Check(value); !errors.Is(err, clienttoken.ErrUnknown) {
		t.Errorf("Check on the revoking replica = %v, want ErrUnknown", err)
	}
	d = within(t, b, start, time.Second, "the token revoked on a refused by b", func() bool {
		_, err := b.Check(value)
		return errors.Is(err, clienttoken.ErrUnknown)
	})
	t.Logf("revoked on a, refused by b after %s", d)
	if err := b.Revoke(ctx, "review-bot"); !errors.Is(err, clienttoken.ErrNoSuchName) {
		t.Errorf("revoking it again: got %v, want ErrNoSuchName", err)
	}
}

// TestTokenExpiry: an expired token is refused as expired, on every
// replica.
func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	dsn := testenv.Postgres(t)
	s := open(t, dsn)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tok, err := s.Tokens(context.Background(), TokenOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	value, _, err := tok.Create(context.Background(), "ci", []string{"ci"}, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, err := open(t, dsn).Tokens(context.Background(), TokenOptions{Now: func() time.Time { return now.Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Check(value); err != nil {
		t.Errorf("Check before expiry: %v", err)
	}
	if got, err := other.Check(value); !errors.Is(err, clienttoken.ErrExpired) || got.Name != "ci" {
		t.Errorf("Check after expiry = %+v, %v; want ErrExpired", got, err)
	}
}
