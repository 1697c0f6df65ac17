//go:build unix

package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGHUP reloads the config of a running mcproxy.
func TestSIGHUPReloads(t *testing.T) {
	s := startServe(t, map[string]any{"noa": map[string]any{"enabled": false}, "mcpServers": map[string]any{}})
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "SIGHUP reload", 10*time.Second, func() bool {
		log := s.stderr.String()
		i := strings.Index(log, "SIGHUP: reloading the config")
		return i >= 0 && strings.Contains(log[i:], "config reloaded: the servers are unchanged")
	}, s.stderr.String)
}
