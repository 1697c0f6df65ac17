package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Default timeouts.
const (
	DefaultInitTimeout = 30 * time.Second
	DefaultCallTimeout = 120 * time.Second
)

// Duration is a time.Duration written in the config file as a Go duration
// string ("30s", "2m", "1m30s"). Zero means "use the default". A bare number
// is rejected rather than guessed at: 30 could mean seconds or nanoseconds.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String returns d in Go's duration syntax, e.g. "1m30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string, e.g. "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string such as "30s". Numbers and strings
// time.ParseDuration does not accept are errors. (Parse reports the same
// errors with the field's path; this method serves other decoders.)
func (d *Duration) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"30s\" or \"2m\", got %s", data)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// parseDuration wraps time.ParseDuration with an error that shows the
// accepted syntax.
func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit such as \"500ms\", \"30s\", \"2m\" or \"1h30m\"", s)
	}
	return v, nil
}
