package config

import "time"

// ActivityConfig is the call history (issue 30): each tool call through the
// proxy, appended to <data_dir>/activity.jsonl and read by `mcproxy
// activity` and the dashboard. The zero value records, with the defaults.
type ActivityConfig struct {
	// Enabled, when false, records no history. nil means true.
	Enabled *bool `json:"enabled,omitempty"`
	// Retention is how long a call is kept: "7d", "36h", or "off" (kept
	// until max_entries pushes it out). Empty means DefaultActivityRetention.
	Retention string `json:"retention,omitempty"`
	// MaxEntries is how many calls are kept at most, the oldest dropped
	// first. Zero means DefaultActivityMaxEntries.
	MaxEntries int `json:"max_entries,omitempty"`
}

// Activity defaults.
const (
	DefaultActivityRetention  = "7d"
	DefaultActivityMaxEntries = 10000
)

// IsEnabled reports whether the history is recorded.
func (a ActivityConfig) IsEnabled() bool { return a.Enabled == nil || *a.Enabled }

// RetentionPeriod is Retention as a duration; 0 means no age limit. Call
// it on a validated config (an invalid value reads as the default).
func (a ActivityConfig) RetentionPeriod() time.Duration {
	s := a.Retention
	if s == "" {
		s = DefaultActivityRetention
	}
	d, err := ParseRetention(s)
	if err != nil {
		d, _ = ParseRetention(DefaultActivityRetention)
	}
	return d
}

// Entries is MaxEntries with its default.
func (a ActivityConfig) Entries() int {
	if a.MaxEntries <= 0 {
		return DefaultActivityMaxEntries
	}
	return a.MaxEntries
}

func (a ActivityConfig) validate(path string) []error {
	var errs []error
	if a.Retention != "" {
		if _, err := ParseRetention(a.Retention); err != nil {
			errs = append(errs, fieldErr(path+".retention", "%v", err))
		}
	}
	if a.MaxEntries < 0 {
		errs = append(errs, fieldErr(path+".max_entries", "must not be negative, got %d (leave it out for %d)", a.MaxEntries, DefaultActivityMaxEntries))
	}
	return errs
}

// ActivityFile is the call history's file name under the data dir.
const ActivityFile = "activity.jsonl"
