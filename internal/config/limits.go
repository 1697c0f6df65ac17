package config

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of the hardening keys (session_idle_timeout, limits).
const (
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultMaxBatch bounds the messages of one JSON-RPC batch.
	DefaultMaxBatch = 100
	// DefaultMaxRequestBytes bounds one HTTP request body: large enough
	// for any sane tool arguments (a file being written).
	DefaultMaxRequestBytes = 64 << 20
	// DefaultMaxMessageBytes bounds one message an upstream sends.
	DefaultMaxMessageBytes = 64 << 20
	// DefaultReadTimeout bounds reading one HTTP request (headers and
	// body), so a client that sends half a body cannot hold a connection.
	DefaultReadTimeout = 30 * time.Second
	// DefaultMaxSessions bounds the live streamable HTTP sessions: far
	// more than one machine's clients open, far fewer than exhaust memory.
	DefaultMaxSessions = 1000
)

// LimitsConfig caps what one request or one upstream message may cost.
// Zero values mean the defaults above; every refusal names its key.
type LimitsConfig struct {
	// MaxBatch is the most messages one JSON-RPC batch may hold.
	MaxBatch int `json:"max_batch,omitempty"`
	// MaxRequestBytes is the largest HTTP request body accepted.
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
	// MaxMessageBytes is the largest single message (one stdout line of a
	// stdio upstream) read from an upstream; a longer one fails the call
	// in flight and the upstream is restarted.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// ReadTimeout bounds reading one HTTP request's headers and body.
	ReadTimeout Duration `json:"read_timeout,omitempty"`
	// MaxSessions is the most streamable HTTP client sessions open at
	// once; an initialize past it is refused (503).
	MaxSessions int `json:"max_sessions,omitempty"`
}

func (c *Config) applyHardeningDefaults() {
	if c.SessionIdleTimeout == 0 {
		c.SessionIdleTimeout = Duration(DefaultSessionIdleTimeout)
	}
	l := &c.Limits
	if l.MaxBatch == 0 {
		l.MaxBatch = DefaultMaxBatch
	}
	if l.MaxRequestBytes == 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if l.ReadTimeout == 0 {
		l.ReadTimeout = Duration(DefaultReadTimeout)
	}
	if l.MaxSessions == 0 {
		l.MaxSessions = DefaultMaxSessions
	}
}

// validateHardening checks session_idle_timeout, allowed_hosts and limits.
func (c *Config) validateHardening(add func(path, format string, args ...any)) {
	if c.SessionIdleTimeout < 0 {
		add("session_idle_timeout", "must be > 0, got %s", c.SessionIdleTimeout)
	}
	for i, h := range c.AllowedHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/ :@") && !strings.HasPrefix(h, "[") {
			add(fmt.Sprintf("allowed_hosts[%d]", i), "%q is not a host name: give the name clients use, without scheme, port or path (e.g. \"mcproxy.lan\")", h)
		}
	}
	l := c.Limits
	if l.MaxBatch < 0 {
		add("limits.max_batch", "must be > 0, got %d", l.MaxBatch)
	}
	if l.MaxRequestBytes < 0 {
		add("limits.max_request_bytes", "must be > 0, got %d", l.MaxRequestBytes)
	}
	if l.MaxMessageBytes < 0 {
		add("limits.max_message_bytes", "must be > 0, got %d", l.MaxMessageBytes)
	}
	if l.ReadTimeout < 0 {
		add("limits.read_timeout", "must be > 0, got %s", l.ReadTimeout)
	}
	if l.MaxSessions < 0 {
		add("limits.max_sessions", "must be > 0, got %d", l.MaxSessions)
	}
}
