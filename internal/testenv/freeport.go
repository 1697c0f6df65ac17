package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// Ports FreePort draws from: below Linux's default ephemeral range
// (32768-60999), where the kernel puts every bind to port 0 and every
// outgoing connection's local port.
const (
	freePortLow  = 20000
	freePortHigh = 32767
)

var handedOut struct {
	mu    sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback port nothing listens on right now, for a
// server process a test starts on it. Asking the kernel for a free port
// (listening on port 0 and closing) hands out ports of the ephemeral
// range, where the next test's server, or any connection, may take the
// same port before this one's server binds it: the server then fails to
// start while the test, dialling the port, finds the other process
// listening. FreePort draws at random below that range instead, and never
// returns one port twice in a test binary.
func FreePort() (int, error) {
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for range 200 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow+1)
		if handedOut.ports[port] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken by someone else
		}
		ln.Close()
		handedOut.ports[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free loopback port found in %d-%d after 200 tries", freePortLow, freePortHigh)
}

// FreeAddr is FreePort as "127.0.0.1:PORT"; a failure fails t.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
