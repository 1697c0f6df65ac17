package upstream

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

// The helpers below read a config.ServerConfig the way internal/config
// documents it. They are local so this package does not depend on when the
// config package grows the equivalent methods.

// transportKind resolves which transport reaches s: a command means stdio,
// otherwise transport (or its alias type) picks SSE or streamable HTTP, the
// default for a URL.
func transportKind(s config.ServerConfig) string {
	if s.Command != "" {
		return config.TransportStdio
	}
	kind := s.Transport
	if kind == "" {
		kind = s.Type
	}
	switch strings.ToLower(kind) {
	case "sse":
		return config.TransportSSE
	case "stdio":
		return config.TransportStdio
	default:
		return config.TransportStreamableHTTP
	}
}

// enabled reports whether s should be started (nil Enabled means true).
func enabled(s config.ServerConfig) bool { return s.Enabled == nil || *s.Enabled }

// toolAllowed applies allowed_tools (when non-empty, only those) and then
// disabled_tools.
func toolAllowed(s config.ServerConfig, name string) bool {
	if len(s.AllowedTools) > 0 && !slices.Contains(s.AllowedTools, name) {
		return false
	}
	return !slices.Contains(s.DisabledTools, name)
}

// limit is a resolved timeout and the config setting it came from, so
// errors can tell the user which knob to turn.
type limit struct {
	d       time.Duration
	setting string
}

// resolveLimit picks the server's value, else the top-level one, else def.
func resolveLimit(server string, own, top config.Duration, key string, def time.Duration) limit {
	switch {
	case own > 0:
		return limit{own.Std(), fmt.Sprintf("mcpServers.%s.%s", server, key)}
	case top > 0:
		return limit{top.Std(), key}
	default:
		return limit{def, fmt.Sprintf("the default %s (set %s or mcpServers.%s.%s to change it)", key, key, server, key)}
	}
}
