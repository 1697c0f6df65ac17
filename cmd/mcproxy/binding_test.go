package main

import (
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
)

// TestCheckBinding: a loopback listen address, however written, needs no
// auth_token; any address others can reach does.
func TestCheckBinding(t *testing.T) {
	for _, tc := range []struct {
		listen, token string
		ok            bool
	}{
		{"127.0.0.1:8080", "", true},
		{"localhost:8080", "", true},
		{"LOCALHOST:8080", "", true}, // net.Listen resolves it to 127.0.0.1
		{"[::1]:8080", "", true},
		{"[::ffff:127.0.0.1]:8080", "", true},
		{"0.0.0.0:8080", "", false},
		{"[::]:8080", "", false},
		{":8080", "", false},
		{"192.168.1.10:8080", "", false},
		{"0.0.0.0:8080", "s3cret", true},
		{"192.168.1.10:8080", "s3cret", true},
	} {
		t.Run(tc.listen+"/"+tc.token, func(t *testing.T) {
			err := checkBinding(&config.Config{Listen: tc.listen, AuthToken: tc.token})
			if (err == nil) != tc.ok {
				t.Fatalf("checkBinding(%q, token %q) = %v, want ok %v", tc.listen, tc.token, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "auth_token") {
				t.Errorf("error %q does not name auth_token", err)
			}
		})
	}
}
