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
	// MaxConnections bounds each replica's connections to the database
	// (its pool). Each gateway turn in progress holds one for its
	// conversation's lock; a few are always kept for statements and the
	// notifications. Zero = DefaultStoreMaxConnections.
	MaxConnections int `json:"max_connections,omitempty"`
}

// Bounds of store.max_connections.
const (
	DefaultStoreMaxConnections = 32
	MinStoreMaxConnections     = 4
	MaxStoreMaxConnections     = 1000
)

// Connections is MaxConnections with its default filled in.
func (s StoreConfig) Connections() int {
	if s.MaxConnections == 0 {
		return DefaultStoreMaxConnections
	}
	return s.MaxConnections
}

// Shared reports whether a shared store is configured.
func (s StoreConfig) Shared() bool { return s.Postgres != "" }

func (s StoreConfig) validate(path string) []error {
	if s.MaxConnections != 0 && (s.MaxConnections < MinStoreMaxConnections || s.MaxConnections > MaxStoreMaxConnections) {
		return []error{fieldErr(path+".max_connections", "%d is out of range: give %d to %d (default %d), within the database's own max_connections divided among the replicas",
			s.MaxConnections, MinStoreMaxConnections, MaxStoreMaxConnections, DefaultStoreMaxConnections)}
	}
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
