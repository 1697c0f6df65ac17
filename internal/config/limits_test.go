package config

import (
	"strings"
	"testing"
	"time"
)

// session_idle_timeout, allowed_hosts and limits are checked with their
// field paths.
func TestValidateHardening(t *testing.T) {
	c := &Config{
		SessionIdleTimeout: Duration(-time.Second),
		AllowedHosts:       []string{"mcproxy.lan", "http://x.lan", "x.lan:8765", " "},
		Limits:             LimitsConfig{MaxBatch: -1, MaxRequestBytes: -1, MaxMessageBytes: -1, ReadTimeout: Duration(-time.Second), MaxSessions: -1},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted negative limits and malformed hosts")
	}
	for _, want := range []string{
		"session_idle_timeout: must be > 0",
		`allowed_hosts[1]: "http://x.lan" is not a host name`,
		`allowed_hosts[2]: "x.lan:8765" is not a host name`,
		`allowed_hosts[3]`,
		"limits.max_batch: must be > 0",
		"limits.max_request_bytes: must be > 0",
		"limits.max_message_bytes: must be > 0",
		"limits.read_timeout: must be > 0",
		"limits.max_sessions: must be > 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: got\n%v\nwant a problem containing %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "allowed_hosts[0]") {
		t.Errorf("a plain host name was refused: %v", err)
	}
	ok := &Config{AllowedHosts: []string{"mcproxy.lan", "192.168.1.5", "[::1]"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid hosts refused: %v", err)
	}
}
