package gateway

import (
	"context"
	"net/http"
	"testing"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
)

// TestHopHeadersLikeReverseProxy: a model request the gateway sends itself
// and a passthrough request (httputil.ReverseProxy) drop the same
// hop-by-hop headers both ways, those a Connection header names included
// (RFC 9110 §7.6.1), and keep the rest.
func TestHopHeadersLikeReverseProxy(t *testing.T) {
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply {
		return scriptedmodel.Reply{Raw: &scriptedmodel.Raw{Header: http.Header{
			"Connection": {"X-Upstream-Hop"}, "X-Upstream-Hop": {"1"}, "Keep-Alive": {"timeout=5"}, "X-Upstream": {"yes"},
			"Content-Type": {"application/json"}}, Body: []byte(`{}`)}}
	}, projectOff)
	hdr := map[string]string{"Connection": "X-Client-Hop", "X-Client-Hop": "1", "X-Client": "yes", "Content-Type": "application/json"}
	for i, path := range []string{"/v1/messages", "/v1/models"} {
		t.Run(path, func(t *testing.T) {
			resp, _ := r.do(t, context.Background(), http.MethodPost, path, `{"model":"m","max_tokens":1,"messages":[]}`, hdr)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Upstream") != "yes" {
				t.Fatalf("got %d with X-Upstream %q, want 200 with the upstream's own header", resp.StatusCode, resp.Header.Get("X-Upstream"))
			}
			for _, h := range []string{"X-Upstream-Hop", "Keep-Alive"} {
				if v := resp.Header.Get(h); v != "" {
					t.Errorf("the client got hop-by-hop header %s: %q", h, v)
				}
			}
			up := r.up.Requests()[i]
			if up.Header.Get("X-Client-Hop") != "" || up.Header.Get("X-Client") != "yes" {
				t.Errorf("upstream got X-Client-Hop %q and X-Client %q, want none and yes", up.Header.Get("X-Client-Hop"), up.Header.Get("X-Client"))
			}
		})
	}
}
