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
// config.ApplyDefaults fills the top-level value with def and copies it
// into every server that sets none, so a value equal to the one it would
// have inherited is named by where it came from: a timeout message must
// not blame a key the user never set (issue 18).
func resolveLimit(server string, own, top config.Duration, key string, def time.Duration) limit {
	if own > 0 && own == top {
		own = 0
	}
	if top > 0 && top.Std() == def {
		top = 0
	}
	switch {
	case own > 0:
		return limit{own.Std(), fmt.Sprintf("mcpServers.%s.%s", server, key)}
	case top > 0:
		return limit{top.Std(), key}
	default:
		return limit{def, fmt.Sprintf("the default %s (set %s or mcpServers.%s.%s to change it)", key, key, server, key)}
	}
}
