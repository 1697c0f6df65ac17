package oauth

import (
	"path/filepath"
	"reflect"
	"sync"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Set holds one Client per HTTP server, made on first use, so a server
// added or changed by a config reload gets its own. Its methods are safe
// for concurrent use.
type Set struct {
	opts Options

	mu      sync.Mutex
	clients map[string]*setEntry
	old     []*Client // replaced by a changed config; closed with the Set
	closed  bool
}

type setEntry struct {
	sc config.ServerConfig
	c  *Client
}

// Dir is where a data directory keeps the token files.
func Dir(dataDir string) string { return filepath.Join(dataDir, "oauth") }

// NewSet returns an empty Set whose clients use opts; each client's logger
// is opts.Logger with the server's name under "upstream".
func NewSet(opts Options) *Set {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Set{opts: opts, clients: map[string]*setEntry{}}
}

// Client returns the client of server name as sc configures it: the one
// made before when sc's url and oauth block are unchanged, else a new one.
// nil when s is nil, the server is not an HTTP server, its oauth block is
// unusable (the error is logged), or s is closed.
func (s *Set) Client(name string, sc config.ServerConfig) *Client {
	if s == nil || sc.URL == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if e, ok := s.clients[name]; ok {
		if e.sc.URL == sc.URL && reflect.DeepEqual(e.sc.OAuth, sc.OAuth) {
			return e.c
		}
		s.old = append(s.old, e.c)
	}
	o := s.opts
	o.Logger = s.opts.Logger.With(zap.String("upstream", name))
	c, err := New(name, sc, o)
	if err != nil {
		o.Logger.Error("OAuth settings unusable; signing in is off for this server", zap.Error(err))
		delete(s.clients, name)
		return nil
	}
	s.clients[name] = &setEntry{sc: sc, c: c}
	return c
}

// Close ends every sign-in in progress.
func (s *Set) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.closed = true
	all := s.old
	for _, e := range s.clients {
		all = append(all, e.c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.Close()
	}
}
