package oauth

import (
	"path/filepath"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
)

// Set holds one Client per HTTP server of a config.
type Set struct {
	clients map[string]*Client
}

// Dir is where a data directory keeps the token files.
func Dir(dataDir string) string { return filepath.Join(dataDir, "oauth") }

// NewSet makes a Client for every server of cfg that has a URL. Each
// server's logger is opts.Logger with its name under "upstream".
func NewSet(cfg *config.Config, opts Options) (*Set, error) {
	s := &Set{clients: map[string]*Client{}}
	if cfg == nil {
		return s, nil
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	for name, sc := range cfg.MCPServers {
		if sc.URL == "" {
			continue
		}
		o := opts
		o.Logger = log.With(zap.String("upstream", name))
		c, err := New(name, sc, o)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.clients[name] = c
	}
	return s, nil
}

// Client returns the named server's client; nil when s is nil or the
// server is not an HTTP server.
func (s *Set) Client(name string) *Client {
	if s == nil {
		return nil
	}
	return s.clients[name]
}

// Close ends every sign-in in progress.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, c := range s.clients {
		c.Close()
	}
}
