package upstream

import (
	"fmt"
	"time"

	"github.com/mcproxy/mcproxy/internal/config"
)

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
