package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// authSite is a protected MCP server with its own authorization server
// that completes sign-ins: /authorize redirects back with a code (and
// the iss parameter iss returns, when it returns one), /token trades the
// code for the token the server takes.
type authSite struct {
	*site
	mu        sync.Mutex
	registers []map[string]any // bodies of POST /register
	tokens    int              // POST /token requests
	clientIDs []string         // client_id of each authorization request
	refreshes []string         // refresh_token of each refresh request
	iss       func(issuer string) (string, bool)
	token     string // the access token /token issues ("" = "good")
}

func newAuthSite(t *testing.T, as map[string]any) *authSite {
	a := &authSite{site: protectedSite(t, as)}
	a.mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		a.mu.Lock()
		a.registers = append(a.registers, body)
		a.mu.Unlock()
		serveJSON(map[string]any{"client_id": "dyn-" + a.srv.URL, "token_endpoint_auth_method": "none"})(w, r)
	})
	a.mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.clientIDs = append(a.clientIDs, q.Get("client_id"))
		iss := a.iss
		a.mu.Unlock()
		back := url.Values{"code": {"c1"}, "state": {q.Get("state")}}
		if iss != nil {
			if v, ok := iss(a.srv.URL); ok {
				back.Set("iss", v)
			}
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
	})
	a.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		a.tokens++
		if r.PostForm.Get("grant_type") == "refresh_token" {
			a.refreshes = append(a.refreshes, r.PostForm.Get("refresh_token"))
		}
		tok := a.token
		a.mu.Unlock()
		if tok == "" {
			tok = "good"
		}
		serveJSON(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})(w, r)
	})
	return a
}

// browse follows a sign-in URL and its redirects, as the browser of a
// signed-in user does.
func browse(_ context.Context, u string) error {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// TestSignInChecksIssuer signs in through authorization responses with
// and without iss (RFC 9207, SEP-2468): a wrong or normalised iss is
// refused, so is a missing one where the server advertises it; the code
// of a refused response never reaches the token endpoint.
func TestSignInChecksIssuer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		advertised bool
		iss        func(issuer string) (string, bool)
		refused    bool
	}{
		{"advertised and sent", true, func(i string) (string, bool) { return i, true }, false},
		{"not advertised, not sent", false, nil, false},
		{"not advertised, sent", false, func(i string) (string, bool) { return i, true }, false},
		{"advertised, missing", true, nil, true},
		{"advertised, another issuer", true, func(string) (string, bool) { return "https://evil.example", true }, true},
		{"not advertised, another issuer", false, func(string) (string, bool) { return "https://evil.example", true }, true},
		{"advertised, trailing slash", true, func(i string) (string, bool) { return i + "/", true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAuthSite(t, map[string]any{"authorization_response_iss_parameter_supported": tc.advertised})
			a.iss = tc.iss
			c := newTestClient(t, a.srv.URL+"/mcp", nil, Options{})
			err := c.Login(context.Background(), nil, browse)
			if !tc.refused {
				if err != nil {
					t.Fatalf("got %v, want a sign-in", err)
				}
				return
			}
			if !errors.Is(err, ErrIssuerMismatch) {
				t.Fatalf("got %v, want ErrIssuerMismatch", err)
			}
			if a.tokens != 0 {
				t.Errorf("token requests: got %d, want 0 (the refused code must not be used)", a.tokens)
			}
		})
	}
}

// TestRegistrationIsNative checks SEP-837: dynamic registration declares
// mcproxy a native application (a loopback redirect on the user's
// machine).
func TestRegistrationIsNative(t *testing.T) {
	t.Parallel()
	a := newAuthSite(t, nil)
	c := newTestClient(t, a.srv.URL+"/mcp", nil, Options{})
	if err := c.Login(context.Background(), nil, browse); err != nil {
		t.Fatal(err)
	}
	if len(a.registers) != 1 {
		t.Fatalf("registrations: got %d, want 1", len(a.registers))
	}
	if got := a.registers[0]["application_type"]; got != "native" {
		t.Errorf("application_type: got %v, want native", got)
	}
}

// movedAuthServer is a protected MCP server at origin whose metadata names
// moved as its authorization server, and old, the one it named before.
func movedAuthServer(t *testing.T) (old, moved *authSite, origin string) {
	old = newAuthSite(t, nil)
	moved = newAuthSite(t, nil)
	s := newSite(t)
	origin = s.srv.URL
	s.mux.Handle("GET /.well-known/oauth-protected-resource/mcp", serveJSON(map[string]any{
		"resource": origin + "/mcp", "authorization_servers": []string{moved.srv.URL},
	}))
	guardMCP(s)
	return old, moved, origin
}

// TestReregistersWhenAuthServerMoves checks SEP-2352: when the server's
// metadata names another authorization server after a token is refused,
// mcproxy registers with the new one and offers it nothing from the old
// one (no refresh token there, no client ID).
func TestReregistersWhenAuthServerMoves(t *testing.T) {
	t.Parallel()
	old, moved, origin := movedAuthServer(t)
	old.token = "stale" // what the server no longer takes
	// Tokens and a registration from the old authorization server.
	dir := seedTokens(t, old.site, &Token{AccessToken: "stale", RefreshToken: "r1", Expiry: time.Now().Add(time.Hour)})
	c := newTestClient(t, origin+"/mcp", nil, Options{Dir: dir, Open: browse})
	resp, err := post(t, c, origin+"/mcp", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %v %v, want 200 after signing in at the new authorization server", resp, err)
	}
	if old.tokens != 0 {
		t.Errorf("token requests at the old authorization server: got %d, want 0", old.tokens)
	}
	if len(moved.registers) != 1 {
		t.Errorf("registrations at the new authorization server: got %d, want 1", len(moved.registers))
	}
	if slices.Contains(moved.clientIDs, "dyn") {
		t.Errorf("the new authorization server was offered the old client ID (authorization requests: %q)", moved.clientIDs)
	}
	if st := c.Status(); st.Issuer != moved.srv.URL {
		t.Errorf("stored issuer: got %q, want %q", st.Issuer, moved.srv.URL)
	}
}

// TestNoRefreshAtAnotherAuthServer checks SEP-2352 for a token that has
// expired when the server's metadata names a new authorization server:
// the refresh token the old server issued is not offered to the new one
// (it would hand a credential to a server that never issued it); mcproxy
// signs in there instead.
func TestNoRefreshAtAnotherAuthServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		oc        *config.OAuthConfig
		reg       Registration
		registers int
	}{
		{"dynamic registration", nil, Registration{ClientID: "dyn", AuthMethod: "none", Dynamic: true}, 1},
		{"configured client", &config.OAuthConfig{ClientID: "cfg"}, Registration{ClientID: "cfg", AuthMethod: "none"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old, moved, origin := movedAuthServer(t)
			dir := t.TempDir()
			reg := tc.reg
			reg.Issuer = old.srv.URL
			if err := (Files{Dir: dir}).Save("srv", &Record{
				Registration: &reg,
				Token:        &Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Minute)},
			}); err != nil {
				t.Fatal(err)
			}
			c := newTestClient(t, origin+"/mcp", tc.oc, Options{Dir: dir, Open: browse})
			resp, err := post(t, c, origin+"/mcp", nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("got %v %v, want 200 after signing in at the new authorization server", resp, err)
			}
			moved.mu.Lock()
			defer moved.mu.Unlock()
			if len(moved.refreshes) != 0 {
				t.Errorf("refresh tokens offered to the new authorization server: got %q, want none", moved.refreshes)
			}
			if len(moved.registers) != tc.registers {
				t.Errorf("registrations at the new authorization server: got %d, want %d", len(moved.registers), tc.registers)
			}
			if st := c.Status(); st.Issuer != moved.srv.URL {
				t.Errorf("stored issuer: got %q, want %q", st.Issuer, moved.srv.URL)
			}
		})
	}
}

// TestDefaultClientMetadataDocument checks that a server supporting client
// ID metadata documents gets mcproxy's own when the config names none,
// once the document checks out; otherwise, or with "none", mcproxy
// registers.
func TestDefaultClientMetadataDocument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      string                               // oauth.client_metadata_url
		doc      func(u string) (map[string]any, int) // the published document and status
		wantCIMD bool
	}{
		{"published", "", func(u string) (map[string]any, int) {
			return map[string]any{"client_id": u, "redirect_uris": []string{"http://127.0.0.1/callback"}}, http.StatusOK
		}, true},
		{"not published", "", func(string) (map[string]any, int) { return nil, http.StatusNotFound }, false},
		{"another client_id", "", func(string) (map[string]any, int) {
			return map[string]any{"client_id": "https://other.example/doc.json", "redirect_uris": []string{"http://127.0.0.1/callback"}}, http.StatusOK
		}, false},
		{"no loopback redirect", "", func(u string) (map[string]any, int) {
			return map[string]any{"client_id": u, "redirect_uris": []string{"https://app.example/callback"}}, http.StatusOK
		}, false},
		{"turned off", config.ClientMetadataNone, func(u string) (map[string]any, int) {
			return map[string]any{"client_id": u, "redirect_uris": []string{"http://127.0.0.1/callback"}}, http.StatusOK
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newAuthSite(t, map[string]any{"client_id_metadata_document_supported": true})
			docURL := a.srv.URL + "/client-metadata.json"
			a.mux.HandleFunc("GET /client-metadata.json", func(w http.ResponseWriter, r *http.Request) {
				doc, status := tc.doc(docURL)
				if status != http.StatusOK {
					http.Error(w, "no", status)
					return
				}
				serveJSON(doc)(w, r)
			})
			c := newTestClient(t, a.srv.URL+"/mcp", &config.OAuthConfig{ClientMetadataURL: tc.cfg}, Options{ClientMetadataURL: docURL})
			if err := c.Login(context.Background(), nil, browse); err != nil {
				t.Fatal(err)
			}
			usedDoc := slices.Equal(a.clientIDs, []string{docURL})
			if usedDoc != tc.wantCIMD || (len(a.registers) == 0) != tc.wantCIMD {
				t.Errorf("got authorization client_ids %q and %d registrations, want the document used: %v",
					a.clientIDs, len(a.registers), tc.wantCIMD)
			}
			fetched := slices.Contains(a.requests(), "GET /client-metadata.json")
			if tc.cfg == config.ClientMetadataNone && fetched {
				t.Errorf("the document was fetched although client_metadata_url is %q", tc.cfg)
			}
		})
	}
}

// TestNoPublishedDocumentRegisters: with no document published
// (DefaultClientMetadataURL empty) and none configured, a server that
// supports metadata documents gets a dynamic registration, and no URL is
// offered as mcproxy's client ID.
func TestNoPublishedDocumentRegisters(t *testing.T) {
	t.Parallel()
	a := newAuthSite(t, map[string]any{"client_id_metadata_document_supported": true})
	site, _ := url.Parse(a.srv.URL)
	var mu sync.Mutex
	var elsewhere []string // requests to any host but the site's
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != site.Host {
			mu.Lock()
			elsewhere = append(elsewhere, r.URL.String())
			mu.Unlock()
			return nil, fmt.Errorf("the test allows no request to %s", r.URL.Host)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	// New, not newTestClient: that one names a document of its own.
	c, err := New("srv", config.ServerConfig{URL: a.srv.URL + "/mcp", OAuth: &config.OAuthConfig{}}, Options{Dir: t.TempDir(), HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Login(context.Background(), nil, browse); err != nil {
		t.Fatal(err)
	}
	if len(a.registers) != 1 {
		t.Errorf("got %d registrations, want 1", len(a.registers))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("sign-in reached out to %q; with no document published it must use only the servers it signs in to", elsewhere)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRefreshKeepsClient: where a published metadata document is on
// offer, a refresh still goes to the client the tokens were issued to
// (the stored dynamic registration); the document is for new sign-ins.
func TestRefreshKeepsClient(t *testing.T) {
	t.Parallel()
	s := protectedSite(t, map[string]any{"client_id_metadata_document_supported": true})
	docURL := s.srv.URL + "/client-metadata.json"
	s.mux.Handle("GET /client-metadata.json", serveJSON(map[string]any{"client_id": docURL, "redirect_uris": []string{"http://127.0.0.1/callback"}}))
	var mu sync.Mutex
	var clients []string
	s.mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		clients = append(clients, r.PostForm.Get("client_id"))
		mu.Unlock()
		serveJSON(map[string]any{"access_token": "good", "token_type": "Bearer", "expires_in": 3600})(w, r)
	})
	dir := seedTokens(t, s, &Token{AccessToken: "old", RefreshToken: "r1", Expiry: time.Now().Add(-time.Minute)})
	c := newTestClient(t, s.srv.URL+"/mcp", nil, Options{Dir: dir, ClientMetadataURL: docURL})
	resp, err := post(t, c, s.srv.URL+"/mcp", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("got %v %v, want 200 after a refresh", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(clients, []string{"dyn"}) {
		t.Errorf("token requests' client_id: got %q, want [dyn]", clients)
	}
}
