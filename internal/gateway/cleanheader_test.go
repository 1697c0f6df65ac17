package gateway

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cleanHeader drops mcproxy's credentials wherever a client may put them
// (the token header, its auth_token as a bearer in any spelling the guard
// takes, the dashboard's old cookie among others) and leaves every other
// header and cookie exactly as sent (issue 26).
func TestCleanHeader(t *testing.T) {
	g := &Gateway{authToken: "tok"}
	for _, tc := range []struct {
		name     string
		in, want http.Header
	}{
		{"token header and session", http.Header{"X-Mcproxy-Token": {"tok"}, "X-Mcproxy-Session": {"s"}, "X-Api-Key": {"k"}}, http.Header{"X-Api-Key": {"k"}}},
		{"bearer", http.Header{"Authorization": {"Bearer tok"}}, http.Header{}},
		{"bearer, lower case and spaced", http.Header{"Authorization": {" bearer   tok "}}, http.Header{}},
		{"provider key kept", http.Header{"Authorization": {"Bearer sk-provider"}}, http.Header{"Authorization": {"Bearer sk-provider"}}},
		{"token among two", http.Header{"Authorization": {"Bearer tok", "Bearer sk-provider"}}, http.Header{"Authorization": {"Bearer sk-provider"}}},
		{"not a bearer", http.Header{"Authorization": {"Basic tok"}}, http.Header{"Authorization": {"Basic tok"}}},
		{"cookie between", http.Header{"Cookie": {"a=1; mcproxy_token=tok; b=2"}}, http.Header{"Cookie": {"a=1; b=2"}}},
		{"cookie first, no spaces", http.Header{"Cookie": {"mcproxy_token=tok;a=1;b=\"x y\""}}, http.Header{"Cookie": {"a=1;b=\"x y\""}}},
		{"cookie last", http.Header{"Cookie": {"a=1; mcproxy_token=tok"}}, http.Header{"Cookie": {"a=1"}}},
		{"cookie alone", http.Header{"Cookie": {"mcproxy_token=tok"}}, http.Header{}},
		{"cookie in one of two lines", http.Header{"Cookie": {"mcproxy_token=old", "c=3"}}, http.Header{"Cookie": {"c=3"}}},
		{"other cookies untouched", http.Header{"Cookie": {"a=1;  b=2; mcproxy_token_x=3"}}, http.Header{"Cookie": {"a=1;  b=2; mcproxy_token_x=3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.in.Clone()
			g.cleanHeader(h)
			if d := cmp.Diff(tc.want, h); d != "" {
				t.Errorf("cleanHeader(%v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
	// Without auth_token, Authorization is the provider's whatever it says.
	h := http.Header{"Authorization": {"Bearer tok"}, "Cookie": {"mcproxy_token=tok; a=1"}}
	(&Gateway{}).cleanHeader(h)
	if d := cmp.Diff(http.Header{"Authorization": {"Bearer tok"}, "Cookie": {"a=1"}}, h); d != "" {
		t.Errorf("without auth_token (-want +got):\n%s", d)
	}
}
