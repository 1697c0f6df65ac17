package config

import (
	"strings"
	"testing"
)

// TestStore: store.postgres takes a postgres:// DSN through ${VAR}; a bad
// one is an error naming the field that never shows the value (it holds a
// password).
func TestStore(t *testing.T) {
	env := map[string]string{"PGPW": "s3kr1t"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := Parse([]byte(`{"store": {"postgres": "postgres://mc:${PGPW}@db:5432/mc"}}`), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Store.Postgres, "postgres://mc:s3kr1t@db:5432/mc"; got != want || !cfg.Store.Shared() {
		t.Errorf("got %q (shared %v), want %q", got, cfg.Store.Shared(), want)
	}
	if cfg, err := Parse([]byte(`{}`), nil); err != nil || cfg.Store.Shared() {
		t.Errorf("no store: got %v, shared %v; want files", err, cfg.Store.Shared())
	}
	for _, bad := range []string{"mysql://mc:s3kr1t@db/mc", "s3kr1t", "postgres://mc:s3kr1t@/mc"} {
		_, err := Parse([]byte(`{"store": {"postgres": "`+bad+`"}}`), nil)
		if err == nil || !strings.Contains(err.Error(), "store.postgres") {
			t.Errorf("%s: got %v, want an error naming store.postgres", bad, err)
			continue
		}
		if strings.Contains(err.Error(), "s3kr1t") {
			t.Errorf("the error shows the DSN's secret: %v", err)
		}
	}
}

// TestStoreMaxConnections: store.max_connections defaults to 32 and takes
// 4 to 1000; a value outside says the range.
func TestStoreMaxConnections(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`{"store": {"postgres": "postgres://db/mc"}}`), nil)
	if err != nil || cfg.Store.Connections() != DefaultStoreMaxConnections {
		t.Fatalf("default: got %v, %d; want %d", err, cfg.Store.Connections(), DefaultStoreMaxConnections)
	}
	cfg, err = Parse([]byte(`{"store": {"postgres": "postgres://db/mc", "max_connections": 80}}`), nil)
	if err != nil || cfg.Store.Connections() != 80 {
		t.Fatalf("80: got %v, %d", err, cfg.Store.Connections())
	}
	for _, bad := range []string{"3", "1001", "-1"} {
		_, err := Parse([]byte(`{"store": {"postgres": "postgres://db/mc", "max_connections": `+bad+`}}`), nil)
		if err == nil || !strings.Contains(err.Error(), "store.max_connections") || !strings.Contains(err.Error(), "4 to 1000") {
			t.Errorf("%s: got %v, want an error naming store.max_connections and its range", bad, err)
		}
	}
}
