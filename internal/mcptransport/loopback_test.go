package mcptransport

import "testing"

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"LOCALHOST", true},
		{"localhost.", true},
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"[::1]", true},
		{"::ffff:127.0.0.1", true},
		{"[::ffff:127.0.0.1]", true},
		{"", false},
		{"0.0.0.0", false},
		{"::", false},
		{"[::]", false},
		{"192.168.1.10", false},
		{"::ffff:192.168.1.10", false},
		{"fe80::1", false},
		{"localhost.example.com", false},
		{"example.com", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			if got := IsLoopback(tc.host); got != tc.want {
				t.Errorf("IsLoopback(%q) = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

// TestGuardMappedLoopbackHost: a request addressed to the IPv4 loopback
// written as an IPv6-mapped address is local to the guard, as it is to the
// listen check.
func TestGuardMappedLoopbackHost(t *testing.T) {
	t.Parallel()
	allowed := allowedHosts("127.0.0.1", nil)
	for _, host := range []string{"[::ffff:127.0.0.1]:8080", "LOCALHOST:8080", "[::1]:8080"} {
		if !isLocal(hostOnly(host), allowed) {
			t.Errorf("isLocal(hostOnly(%q)) = false, want true", host)
		}
	}
	if isLocal(hostOnly("192.168.1.10:8080"), allowed) {
		t.Errorf("isLocal(hostOnly(%q)) = true, want false", "192.168.1.10:8080")
	}
}
