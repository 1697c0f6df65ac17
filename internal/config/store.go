package config

import "net/url"

// StoreConfig chooses where the state replicas share is kept (issue 32).
// The zero value keeps everything in files under data_dir, as a single
// mcproxy always has.
type StoreConfig struct {
	// Postgres is the DSN of a PostgreSQL database that replicas share,
	// e.g. "postgres://mcproxy:${PGPASSWORD}@db:5432/mcproxy". Give the
	// password through ${VAR}: the DSN is never logged, and errors show it
	// without its user, password and parameters. Empty means files.
	Postgres string `json:"postgres,omitempty"`
}

// Shared reports whether a shared store is configured.
func (s StoreConfig) Shared() bool { return s.Postgres != "" }

func (s StoreConfig) validate(path string) []error {
	if s.Postgres == "" {
		return nil
	}
	// The value holds a password: the error names the field, never the value.
	u, err := url.Parse(s.Postgres)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return []error{fieldErr(path+".postgres", "not a postgres:// URL with a host: give the database's DSN, e.g. \"postgres://mcproxy:${PGPASSWORD}@db.internal:5432/mcproxy\", or leave store out to keep the state in files")}
	}
	return nil
}
