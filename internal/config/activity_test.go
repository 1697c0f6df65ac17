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

func TestTracingConfig(t *testing.T) {
	for _, tc := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"},
		{"https://otel.example.com/", "https://otel.example.com/v1/traces"},
		{"http://127.0.0.1:4318/custom/traces", "http://127.0.0.1:4318/custom/traces"},
	} {
		cfg, err := Parse([]byte(`{"tracing": {"endpoint": "`+tc.endpoint+`"}}`), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.endpoint, err)
		}
		if !cfg.Tracing.Enabled() || cfg.Tracing.TracesURL() != tc.want {
			t.Errorf("%s: got enabled %v, URL %q; want on, %q", tc.endpoint, cfg.Tracing.Enabled(), cfg.Tracing.TracesURL(), tc.want)
		}
	}
	cfg, err := Parse([]byte(`{}`), nil)
	if err != nil || cfg.Tracing.Enabled() {
		t.Errorf("no tracing section: got %v %+v, want off", err, cfg.Tracing)
	}
	for _, bad := range []string{"127.0.0.1:4318", "ftp://x", "http://"} {
		_, err := Parse([]byte(`{"tracing": {"endpoint": "`+bad+`"}}`), nil)
		if err == nil || !strings.Contains(err.Error(), "tracing.endpoint") {
			t.Errorf("%s: got %v, want an error naming tracing.endpoint", bad, err)
		}
	}
}
