package config

import (
	"strings"
	"testing"
	"time"
)

func TestActivityConfig(t *testing.T) {
	cfg, err := Parse([]byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Activity; !a.IsEnabled() || a.RetentionPeriod() != 7*24*time.Hour || a.Entries() != DefaultActivityMaxEntries {
		t.Errorf("defaults: got enabled %v, retention %v, max_entries %d; want on, 7 days, %d", a.IsEnabled(), a.RetentionPeriod(), a.Entries(), DefaultActivityMaxEntries)
	}
	cfg, err = Parse([]byte(`{"activity": {"enabled": false, "retention": "36h", "max_entries": 50}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Activity; a.IsEnabled() || a.RetentionPeriod() != 36*time.Hour || a.Entries() != 50 {
		t.Errorf("values: got %+v", a)
	}
	for _, tc := range []struct{ in, key string }{
		{`{"retention": "a week"}`, "activity.retention"},
		{`{"max_entries": -1}`, "activity.max_entries"},
	} {
		_, err := Parse([]byte(`{"activity": `+tc.in+`}`), nil)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: got %v, want an error naming %s", tc.in, err, tc.key)
		}
	}
}
