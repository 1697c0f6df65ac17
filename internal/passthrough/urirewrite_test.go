package passthrough

import (
	"testing"

	"go.uber.org/zap"
)

// TestCollidingURIClaims: the later of two servers that claim one URI has
// it rewritten under its name, unless it asked for its names exactly as
// sent ("prefix": ""): then it is withheld (and logged); a server listing a
// URI twice keeps the first.
func TestCollidingURIClaims(t *testing.T) {
	prefixes := map[string]string{"keeper": "keeper__", "later": "later__", "exact": ""}
	c := newCatalogFront(nil, nil, zap.NewNop(), func(s string) string { return prefixes[s] })
	owners := map[string]string{"docs://readme": "keeper"}
	for _, tc := range []struct {
		server, uri string
		want        string
		exposed     bool
	}{
		{"keeper", "docs://new", "docs://new", true},
		{"later", "docs://readme", "mcproxy://later/docs://readme", true},
		{"exact", "docs://readme", "", false},
		{"keeper", "docs://readme", "", false},
	} {
		c.mu.Lock()
		got, ok := c.claim("resource", tc.uri, tc.server, prefixes[tc.server], owners)
		c.mu.Unlock()
		if got != tc.want || ok != tc.exposed {
			t.Errorf("%s claims %s: got %q, %v; want %q, %v", tc.server, tc.uri, got, ok, tc.want, tc.exposed)
		}
	}
	for _, uri := range []string{"mcproxy://later/docs://readme", "mcproxy://later/", "mcproxy:///docs://readme", "docs://readme"} {
		server, orig, ok := splitRewritten(uri)
		if want := uri == "mcproxy://later/docs://readme"; ok != want || (ok && (server != "later" || orig != "docs://readme")) {
			t.Errorf("splitRewritten(%q) = %q, %q, %v", uri, server, orig, ok)
		}
	}
}
