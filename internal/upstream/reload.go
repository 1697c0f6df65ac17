package upstream

import (
	"context"
	"reflect"
	"slices"
	"sort"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/goroutine"
)

// newLink prepares the link of one configured server; nothing starts.
func (m *Manager) newLink(name string, sc config.ServerConfig, cfg *config.Config) *link {
	l := &link{
		m:         m,
		name:      name,
		cfg:       sc,
		kind:      sc.TransportKind(),
		init:      resolveLimit(name, sc.InitTimeout, cfg.InitTimeout, "init_timeout", config.DefaultInitTimeout),
		call:      resolveLimit(name, sc.CallTimeout, cfg.CallTimeout, "call_timeout", config.DefaultCallTimeout),
		log:       m.log.With(zap.String("upstream", name)),
		wake:      make(chan struct{}, 1),
		firstDone: make(chan struct{}),
		state:     StateConnecting,
		changed:   make(chan struct{}),
	}
	if !sc.IsEnabled() {
		l.state = StateDisabled
	}
	l.recall()
	return l
}

// newBrokenLink is the link of a server set aside for the problems of its
// config entry: it never starts, and shows as misconfigured with them.
func (m *Manager) newBrokenLink(name, problems string, cfg *config.Config) *link {
	l := m.newLink(name, config.ServerConfig{}, cfg)
	l.broken, l.state, l.lastErr = problems, StateMisconfigured, problems
	return l
}

// startable reports whether l's server is to be connected: enabled and
// free of config problems.
func (l *link) startable() bool { return l.broken == "" && l.cfg.IsEnabled() }

// roster is the current set of links and their sorted names; the caller
// must not modify either.
func (m *Manager) roster() (map[string]*link, []string) {
	m.rosterMu.RLock()
	defer m.rosterMu.RUnlock()
	return m.links, m.names
}

// launch starts l's supervisor under its own context, so Reconfigure can
// stop one server without touching the others. m.mu must be held.
func (m *Manager) launch(l *link) {
	ctx, cancel := context.WithCancel(m.ctx)
	l.stop, l.done = cancel, make(chan struct{})
	m.wg.Add(1)
	goroutine.Go(l.log, "upstream supervisor "+l.name, func() {
		defer m.wg.Done()
		defer close(l.done)
		l.run(ctx)
	})
}

// Changes is what Reconfigure did, each list sorted.
type Changes struct {
	Added, Removed, Changed []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.Added)+len(c.Removed)+len(c.Changed) == 0
}

// Reconfigure applies a new configuration's servers to a running Manager
// (issue 18, live configuration): servers that are new start, servers gone
// from cfg stop, and servers whose settings changed (command, env, URL,
// filters, timeouts, enabled) are stopped and started again; the others
// keep their connections. A server in cfg.Broken stops and shows as
// misconfigured until a later configuration mends its entry. A stopped
// server is published (Options.Catalog, OnToolsChanged) with nil tools
// before its replacement starts, so its tools leave the catalog. New
// servers connect in the background: Reconfigure does not wait for them.
// cfg must be validated, with defaults applied, and is not kept beyond the
// server entries it holds. After Close it does nothing.
func (m *Manager) Reconfigure(cfg *config.Config) Changes {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Changes{}
	}
	old, _ := m.roster()
	next := make(map[string]*link, len(cfg.MCPServers)+len(cfg.Broken))
	var ch Changes
	var stopping []*link
	links := make(map[string]*link, len(cfg.MCPServers)+len(cfg.Broken))
	for name, sc := range cfg.MCPServers {
		links[name] = m.newLink(name, sc, cfg)
	}
	for name, problems := range cfg.Broken {
		links[name] = m.newBrokenLink(name, problems, cfg)
	}
	for name, nl := range links {
		ol, ok := old[name]
		switch {
		case !ok:
			ch.Added = append(ch.Added, name)
		case reflect.DeepEqual(ol.cfg, nl.cfg) && ol.broken == nl.broken && ol.init == nl.init && ol.call == nl.call:
			next[name] = ol
			continue
		default:
			ch.Changed = append(ch.Changed, name)
			stopping = append(stopping, ol)
		}
		next[name] = nl
	}
	for name, ol := range old {
		if _, ok := links[name]; !ok {
			ch.Removed = append(ch.Removed, name)
			stopping = append(stopping, ol)
		}
	}
	if ch.Empty() {
		return ch
	}
	sort.Strings(ch.Added)
	sort.Strings(ch.Removed)
	sort.Strings(ch.Changed)

	// Stop the old links first: calls to them fail as down meanwhile, and
	// their nil tool report comes before the new link's first one.
	for _, ol := range stopping {
		if ol.stop != nil {
			ol.stop()
			<-ol.done
		}
		ol.notify(nil)
	}
	names := make([]string, 0, len(next))
	for name := range next {
		names = append(names, name)
	}
	slices.Sort(names)
	m.rosterMu.Lock()
	m.links, m.names = next, names
	m.rosterMu.Unlock()

	select {
	case <-m.started: // otherwise Start launches them
		for _, name := range append(ch.Added, ch.Changed...) {
			if l := next[name]; l.startable() {
				m.launch(l)
			}
		}
	default:
	}
	m.log.Info("configuration reloaded", zap.Strings("added", ch.Added), zap.Strings("removed", ch.Removed), zap.Strings("changed", ch.Changed))
	return ch
}
