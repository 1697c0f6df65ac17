package upstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/oauth"
)

// TestNeedsSignIn: a server that answers 401 with an OAuth challenge is
// "needs sign-in" (not down with a backoff), and its error names the
// command to run; without OAuth, a bare 401 says to sign in or to set a
// token header.
func TestNeedsSignIn(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":"` + srv.URL + `/mcp","authorization_servers":["` + srv.URL + `"]}`))
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	servers := map[string]config.ServerConfig{"hosted": {URL: srv.URL + "/mcp"}}

	t.Run("with OAuth", func(t *testing.T) {
		set := oauth.NewSet(oauth.Options{Dir: t.TempDir()})
		t.Cleanup(set.Close)
		m := startManager(t, servers, Options{OAuth: set, MinBackoff: 50 * time.Millisecond})
		st := statusOf(t, m, "hosted")
		if st.State != StateNeedsSignIn || !strings.Contains(st.LastError, "mcproxy auth login hosted") {
			t.Errorf("got state %q, error %q; want needs sign-in naming `mcproxy auth login hosted`", st.State, st.LastError)
		}
		_, err := m.Call(t.Context(), "hosted", "any", nil)
		if de, ok := err.(*DownError); !ok || de.State != StateNeedsSignIn || !strings.Contains(err.Error(), "mcproxy auth login hosted") {
			t.Errorf("Call: got %v, want a *DownError in needs sign-in naming the command", err)
		}
	})
	t.Run("without OAuth", func(t *testing.T) {
		m := startManager(t, servers, Options{})
		st := statusOf(t, m, "hosted")
		if st.State != StateDown || !strings.Contains(st.LastError, "mcproxy auth login hosted") || !strings.Contains(st.LastError, "mcpServers.hosted.headers") {
			t.Errorf("got state %q, error %q; want down, suggesting the sign-in and a token header", st.State, st.LastError)
		}
	})
}
