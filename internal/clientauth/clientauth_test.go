package clientauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/clienttoken"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/ratelimit"
)

type fixture struct {
	srv          *httptest.Server
	dir          string
	store        *clienttoken.File
	review, desk string // token values
}

// echo answers with what the front would see: the rewritten path and the
// identity.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	id, ok := FromContext(r.Context())
	io.WriteString(w, r.URL.Path+" profile="+id.Profile+" who="+id.Label()+" "+map[bool]string{true: "ctx", false: "noctx"}[ok])
})

func newFixture(t *testing.T, profiles map[string]config.ProfileConfig, now func() time.Time) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	var err error
	f.store, err = clienttoken.Open(f.dir, clienttoken.Options{PollInterval: 50 * time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := f.store.Watch(ctx)
	t.Cleanup(func() { cancel(); <-done })
	cli, _ := clienttoken.Open(f.dir, clienttoken.Options{})
	if f.review, _, err = cli.Create(ctx, "review-bot", []string{"review"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if f.desk, _, err = cli.Create(ctx, "desk-app", []string{"desk"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	a := New(Options{AuthToken: "admin-secret", Tokens: f.store, Profiles: profiles, Limits: ratelimit.New(), Now: now})
	f.srv = httptest.NewServer(a.Handler(echo))
	t.Cleanup(f.srv.Close)
	waitFor(t, func() bool { _, err := f.store.Check(f.desk); return err == nil })
	return f
}

func (f *fixture) do(t *testing.T, method, path, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader("{}"))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

var twoProfiles = map[string]config.ProfileConfig{
	"review": {Tools: []string{"github:get_*"}},
	"desk":   {Servers: []string{"memory"}},
}

func TestProfileAccess(t *testing.T) {
	f := newFixture(t, twoProfiles, nil)
	for _, c := range []struct {
		path, token string
		status      int
		body        string
	}{
		{"/mcp/p/review", f.review, 200, "/mcp profile=review who=review-bot ctx"},
		{"/sse/p/desk", f.desk, 200, "/sse profile=desk who=desk-app ctx"},
		{"/sse/p/desk/message", f.desk, 200, "/message profile=desk who=desk-app ctx"},
		{"/sse/p/desk/message", f.review, 403, "client token review-bot is not for profile desk"},
		{"/mcp/p/desk", "admin-secret", 200, "/mcp profile=desk who=(admin) ctx"},
		{"/mcp/p/desk", f.review, 403, "client token review-bot is not for profile desk; use its profile's endpoint (/mcp/p/review)"},
		{"/mcp/p/review", "", 401, "send a client token"},
		{"/mcp/p/review", clienttoken.Prefix + "forged", 401, "unknown or revoked client token"},
		{"/mcp/p/nope", f.review, 404, `no profile "nope"`},
		{"/mcp", f.review, 200, "/mcp profile= who=(anonymous) noctx"}, // not a profile path: Guard's to check
	} {
		status, body, h := f.do(t, http.MethodPost, c.path, c.token)
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s with %q: %d %q, want %d containing %q", c.path, c.token, status, body, c.status, c.body)
		}
		if status == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: a 401 without WWW-Authenticate", c.path)
		}
		for _, v := range []string{f.review, f.desk} {
			if strings.Contains(body, v) {
				t.Errorf("%s: the answer holds a token value", c.path)
			}
		}
	}
}

// A caller without a good token cannot tell a configured profile from an
// unknown one: both answer 401 with the same body. Only an authenticated
// caller learns that a name is not configured.
func TestNoProfileEnumeration(t *testing.T) {
	f := newFixture(t, twoProfiles, nil)
	for _, token := range []string{"", clienttoken.Prefix + "forged", "not-a-token"} {
		sKnown, bKnown, _ := f.do(t, http.MethodPost, "/mcp/p/review", token)
		for _, path := range []string{"/mcp/p/nope", "/sse/p/nope", "/sse/p/nope/message"} {
			s, b, _ := f.do(t, http.MethodPost, path, token)
			if s != http.StatusUnauthorized || s != sKnown || b != bKnown {
				t.Errorf("%s with %q: %d %q; a configured profile: %d %q; want the same 401", path, token, s, b, sKnown, bKnown)
			}
		}
	}
	for _, token := range []string{"admin-secret", f.review} {
		if s, b, _ := f.do(t, http.MethodPost, "/mcp/p/nope", token); s != http.StatusNotFound || !strings.Contains(b, `no profile "nope"`) {
			t.Errorf("an authenticated caller on an unknown profile: %d %q, want 404", s, b)
		}
	}
}

// A token revoked by `mcproxy tokens revoke` (another store on the same
// file) gets 401 within a second; the other keeps working.
func TestRevokedWithinASecond(t *testing.T) {
	f := newFixture(t, twoProfiles, nil)
	if s, _, _ := f.do(t, http.MethodPost, "/mcp/p/review", f.review); s != 200 {
		t.Fatalf("before revoke: %d", s)
	}
	cli, _ := clienttoken.Open(f.dir, clienttoken.Options{})
	start := time.Now()
	if err := cli.Revoke(context.Background(), "review-bot"); err != nil {
		t.Fatal(err)
	}
	for {
		s, body, _ := f.do(t, http.MethodPost, "/mcp/p/review", f.review)
		if s == 401 {
			if !strings.Contains(body, "revoked") {
				t.Errorf("401 body %q", body)
			}
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("still %d a second after the revoke", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s, _, _ := f.do(t, http.MethodPost, "/mcp/p/desk", f.desk); s != 200 {
		t.Errorf("the other token after the revoke: %d", s)
	}
}

func TestExpiredRefused(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().Unix())
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	f := newFixture(t, twoProfiles, now)
	cli, _ := clienttoken.Open(f.dir, clienttoken.Options{Now: now})
	v, _, err := cli.Create(context.Background(), "short", []string{"desk"}, now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := f.store.Check(v); return err == nil })
	if s, _, _ := f.do(t, http.MethodPost, "/mcp/p/desk", v); s != 200 {
		t.Fatalf("before expiry: %d", s)
	}
	clock.Add(3600)
	s, body, _ := f.do(t, http.MethodPost, "/mcp/p/desk", v)
	if s != 401 || !strings.Contains(body, "client token short expired") {
		t.Errorf("after expiry: %d %q", s, body)
	}
}

// A rate limit of N calls/s per token holds under 8 concurrent clients
// on one token; refusals are 429 with Retry-After and name the limit's
// key; the other token is unaffected.
func TestRateLimitPerToken(t *testing.T) {
	profiles := map[string]config.ProfileConfig{
		"review": {Tools: []string{"github:get_*"}, RateLimit: config.RateLimitConfig{CallsPerSecond: 20, Burst: 20}},
		"desk":   {Servers: []string{"memory"}, RateLimit: config.RateLimitConfig{CallsPerSecond: 20, Burst: 20}},
	}
	f := newFixture(t, profiles, nil)
	var ok, refused, otherRefused atomic.Int64
	start := time.Now()
	stop := start.Add(time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				s, body, h := f.do(t, http.MethodPost, "/mcp/p/review", f.review)
				switch s {
				case 200:
					ok.Add(1)
				case 429:
					refused.Add(1)
					if h.Get("Retry-After") == "" || !strings.Contains(body, "profiles.review.rate_limit.calls_per_second") {
						t.Errorf("429 %q, Retry-After %q", body, h.Get("Retry-After"))
					}
				default:
					t.Errorf("status %d %q", s, body)
				}
			}
		})
	}
	wg.Go(func() { // the other token, 10 calls over the same second
		for range 10 {
			if s, _, _ := f.do(t, http.MethodPost, "/mcp/p/desk", f.desk); s != 200 {
				otherRefused.Add(1)
			}
			time.Sleep(90 * time.Millisecond)
		}
	})
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	// burst 20 plus 20/s over the time the clients ran.
	maxOK := 20 + int64(20*elapsed) + 1
	t.Logf("%d allowed, %d refused in %.2fs (at most %d allowed)", ok.Load(), refused.Load(), elapsed, maxOK)
	if ok.Load() > maxOK || ok.Load() < 20 {
		t.Errorf("%d calls allowed in %.2fs, want 20 to %d", ok.Load(), elapsed, maxOK)
	}
	if refused.Load() == 0 {
		t.Error("no call was refused; the clients did not reach the limit")
	}
	if otherRefused.Load() != 0 {
		t.Errorf("the other token was refused %d times", otherRefused.Load())
	}
	// A GET (a stream) is not counted.
	if s, _, _ := f.do(t, http.MethodGet, "/sse/p/review", f.review); s != 200 && s != 429 {
		t.Errorf("GET: %d", s)
	}
}

func TestProfileFromPath(t *testing.T) {
	for in, want := range map[string][3]string{
		"/mcp/p/review":       {"review", "/mcp", "true"},
		"/sse/p/desk":         {"desk", "/sse", "true"},
		"/mcp/p/desk/extra":   {"desk", "/mcp", "true"},
		"/sse/p/desk/message": {"desk", "/message", "true"},
		"/mcp/p/desk/message": {"desk", "/mcp", "true"},
		"/mcp/p/":             {"", "", "false"},
		"/mcp":                {"", "", "false"},
		"/message":            {"", "", "false"},
		"/mcp/preview":        {"", "", "false"},
	} {
		p, rest, ok := ProfileFromPath(in)
		if p != want[0] || rest != want[1] || map[bool]string{true: "true", false: "false"}[ok] != want[2] {
			t.Errorf("ProfileFromPath(%q) = %q %q %v, want %v", in, p, rest, ok, want)
		}
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
