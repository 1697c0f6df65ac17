package testenv

import (
	"net"
	"strconv"
	"testing"
)

// FreePort's ports are below the ephemeral range, free to listen on, and
// never handed out twice.
func TestFreePort(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < freePortLow || port > freePortHigh {
			t.Fatalf("got port %d, want one in %d-%d", port, freePortLow, freePortHigh)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
	addr := FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on FreeAddr's %s: %v", addr, err)
	}
	ln.Close()
	if _, port, _ := net.SplitHostPort(addr); port == "" || seen[func() int { p, _ := strconv.Atoi(port); return p }()] {
		t.Errorf("FreeAddr gave %s, a port FreePort had handed out", addr)
	}
}
