package config

import "time"

// Default timeouts.
const (
	DefaultInitTimeout = 30 * time.Second
	DefaultCallTimeout = 120 * time.Second
)

// Duration is a time.Duration written in the config file as a Go duration
// string ("30s", "2m", "1m30s"). Zero means "use the default".
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }
