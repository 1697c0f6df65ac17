package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/upstream"
)

// Warm start (issue 13). The tool lists last seen from each upstream are
// kept in a file (Options.WarmCatalog); on the next start WarmStart puts
// them in the catalog and the index, so retrieve_tools and describe_tool
// answer from them while the upstreams connect. A server's last known tools
// stay in the catalog only while it is connecting: its live list replaces
// them when it comes up, and a server whose attempt fails (or that is in any
// other state but ready) loses them, as a live server that goes down does.
// A call_tool to a connecting server waits for it (the upstream manager
// waits up to its init_timeout).
//
// Before Started, retrieve_tools and describe_tool wait for the servers
// that are connecting with nothing in the catalog, for at most
// Options.StartGrace from the first call that waited: a server that hangs
// at initialize never holds back the start for longer. A server the file
// covers is not waited for: one with last known tools is answered from
// them, and one the last run gave up waiting for (still connecting with no
// tools when its grace ran out, the file's "slow" list) would only make
// the first answer wait a grace again. So a file with every server answers
// at once, and a server the file lacks (a new entry, or a file written by a
// run that had not seen it come up yet) is waited for as on a first run,
// rather than missing from the first answer. Every retrieve_tools answer
// ends with one line naming the servers that are not connected, with their
// state.

// DefaultStartGrace is Options.StartGrace's default.
const DefaultStartGrace = 2 * time.Second

// settlePoll is how often a meta call held before Started looks at the
// upstreams again: the manager reports tool sets, not failed attempts, so
// a server whose first attempt failed is only seen by looking.
const settlePoll = 20 * time.Millisecond

// warmFileVersion is the format of the warm catalog file; a file of another
// version is ignored (and rewritten as the servers come up).
const warmFileVersion = 1

// warmFile is the warm catalog file: every configured server's last known
// tools, and the servers a run's start grace ran out on (slow) while they
// were connecting with none.
type warmFile struct {
	Version int                      `json:"version"`
	Servers map[string][]config.Tool `json:"servers"`
	Slow    []string                 `json:"slow,omitempty"`
}

// warmCatalog is the front's side of warm start.
type warmCatalog struct {
	path string // "" when warm start is off

	// saved is what the file holds. Guarded by Server.syncMu, which also
	// serializes the writes.
	saved map[string][]config.Tool
	// fromFile names the servers whose catalog entries are last known
	// tools, not live ones. Guarded by Server.mu.
	fromFile map[string]bool
	// slow names the servers a start grace ran out on while they were
	// connecting with no tools (in this run or, from the file, the last):
	// meta calls do not wait for them. A server leaves it when its tools
	// come. Guarded by Server.mu; written to the file under syncMu.
	slow map[string]bool
	// graceEnd is when meta calls stop waiting for the upstreams: one
	// grace from the first that waited, so a hanging server delays the
	// start once, not every call.
	graceOnce sync.Once
	graceEnd  time.Time
}

// WarmStart loads the last known tool lists (Options.WarmCatalog) into the
// catalog and the index, for every configured server that is enabled and
// not yet live. Call it before the upstreams start; with no file (a first
// run) it does nothing. It returns how many servers it loaded. A file that
// cannot be read is reported and otherwise ignored: it is a cache.
func (s *Server) WarmStart() (int, error) {
	if s.warm.path == "" {
		return 0, nil
	}
	data, err := os.ReadFile(s.warm.path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the last known tool lists: %w", err)
	}
	var f warmFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, fmt.Errorf("reading the last known tool lists %s: %w (it is rewritten as servers connect)", s.warm.path, err)
	}
	if f.Version != warmFileVersion {
		return 0, nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.warm.saved = f.Servers
	statuses := s.up.Status()
	s.mu.Lock()
	for _, name := range f.Slow {
		if slices.ContainsFunc(statuses, func(st upstream.Status) bool { return st.Server == name }) {
			s.warm.slow[name] = true
		}
	}
	s.mu.Unlock()
	loaded := 0
	for _, st := range statuses {
		tools := f.Servers[st.Server]
		if st.State == upstream.StateDisabled || st.State == upstream.StateMisconfigured || len(tools) == 0 || !validTools(st.Server, tools) {
			continue
		}
		s.mu.RLock()
		_, live := s.tools[st.Server]
		s.mu.RUnlock()
		if live {
			continue
		}
		tools = slices.Clone(tools)
		slices.SortFunc(tools, func(a, b config.Tool) int { return strings.Compare(a.ID, b.ID) })
		s.syncIndex(st.Server, tools)
		s.mu.Lock()
		s.setCatalog(st.Server, tools)
		s.warm.fromFile[st.Server] = true
		s.mu.Unlock()
		loaded++
	}
	if loaded > 0 && s.opts.Mode == config.ModeDirect {
		// A live report equal to the file's list changes nothing in
		// ToolsChanged, so the direct-mode registrations are made here.
		s.syncDirect()
	}
	return loaded, nil
}

// validTools reports whether tools read from the file are server's and
// well formed, so a hand-edited file cannot put a tool under another name.
func validTools(server string, tools []config.Tool) bool {
	for _, t := range tools {
		if t.Server != server || t.Name == "" || t.ID != config.ToolID(server, t.Name) {
			return false
		}
	}
	return true
}

// setCatalog replaces server's catalog entries with tools (sorted by ID;
// none removes the server). s.mu must be held for writing.
func (s *Server) setCatalog(server string, tools []config.Tool) {
	for _, t := range s.tools[server] {
		delete(s.byID, t.ID)
	}
	if len(tools) == 0 {
		delete(s.tools, server)
		delete(s.arrival, server)
		return
	}
	if s.arrival == nil {
		s.arrival = map[string]uint64{}
	}
	if _, ok := s.arrival[server]; !ok {
		// The order servers came in decides who keeps a colliding name.
		s.arrivals++
		s.arrival[server] = s.arrivals
	}
	s.tools[server] = tools
	for _, t := range tools {
		s.byID[t.ID] = t
	}
}

// warmLive is told of every live report of server's tools (nil: down), with
// s.syncMu held: the server's catalog entries are live from now on, and a
// tool list that changed is written to the file.
func (s *Server) warmLive(server string, tools []config.Tool) {
	if s.warm.path == "" {
		return
	}
	s.mu.Lock()
	delete(s.warm.fromFile, server)
	wasSlow := len(tools) > 0 && s.warm.slow[server]
	if wasSlow {
		delete(s.warm.slow, server)
	}
	s.mu.Unlock()
	if len(tools) == 0 || (sameTools(s.warm.saved[server], tools) && !wasSlow) {
		// A server that went down keeps its last known tools in the file.
		return
	}
	next := map[string][]config.Tool{}
	for _, st := range s.up.Status() {
		if t, ok := s.warm.saved[st.Server]; ok {
			next[st.Server] = t
		}
	}
	next[server] = tools
	s.saveWarm(next, server)
}

// warmGraceOver is told that a meta call's start grace ran out: the servers
// still connecting with nothing in the catalog are slow, and the file says
// so, so that the next start does not wait a grace for them again.
func (s *Server) warmGraceOver() {
	if s.warm.path == "" {
		return
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	added := false
	statuses := s.up.Status()
	s.mu.Lock()
	for _, st := range statuses {
		if _, held := s.tools[st.Server]; st.State == upstream.StateConnecting && !held && !s.warm.slow[st.Server] {
			s.warm.slow[st.Server] = true
			added = true
		}
	}
	s.mu.Unlock()
	if added {
		s.saveWarm(s.warm.saved, "")
	}
}

// saveWarm writes servers and the slow servers to the file and keeps
// servers as what it holds; server names the report that caused it, for
// the log ("" for none). s.syncMu must be held.
func (s *Server) saveWarm(servers map[string][]config.Tool, server string) {
	s.mu.RLock()
	slow := slices.Sorted(maps.Keys(s.warm.slow))
	s.mu.RUnlock()
	if err := writeWarmFile(s.warm.path, warmFile{Version: warmFileVersion, Servers: servers, Slow: slow}); err != nil {
		s.log.Warn("saving the last known tool lists for the next start", zap.String("upstream", server), zap.Error(err))
		return
	}
	s.warm.saved = servers
}

// writeWarmFile replaces the file at path atomically. It is not fsynced:
// after a crash the file may be lost or empty, and the next start is then
// simply a cold one.
func writeWarmFile(path string, f warmFile) error {
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	return atomicfile.WriteFile(path, data, atomicfile.Options{NoSync: true})
}

// upstreamView is one look at the upstreams for a meta call.
type upstreamView struct {
	statuses []upstream.Status
	// stale names the servers whose catalog entries are last known tools
	// while the server is connecting.
	stale map[string]bool
	// indexing are the ready servers whose tools are not applied yet.
	indexing []upstream.Status
}

// viewUpstreams looks at the upstreams and drops the last known tools of
// servers that are no longer connecting (their attempt failed, or they are
// in some other state): only a connecting server is offered from the last
// run. A ready server's last known tools stay until its live list arrives,
// an instant later.
func (s *Server) viewUpstreams() upstreamView {
	v := upstreamView{statuses: s.up.Status(), stale: map[string]bool{}}
	s.mu.RLock()
	var drop []string
	for _, st := range v.statuses {
		if st.State == upstream.StateReady && st.Tools > 0 && s.applied[st.Server] == 0 && !s.warm.fromFile[st.Server] {
			v.indexing = append(v.indexing, st)
		}
		if !s.warm.fromFile[st.Server] {
			continue
		}
		switch st.State {
		case upstream.StateConnecting, upstream.StateReady:
			v.stale[st.Server] = true
		default:
			drop = append(drop, st.Server)
		}
	}
	s.mu.RUnlock()
	for _, name := range drop {
		s.dropWarm(name)
	}
	return v
}

// dropWarm removes server's last known tools from the catalog and the
// index, unless live ones replaced them meanwhile.
func (s *Server) dropWarm(server string) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	if !s.warm.fromFile[server] {
		s.mu.Unlock()
		return
	}
	delete(s.warm.fromFile, server)
	s.setCatalog(server, nil)
	s.mu.Unlock()
	s.syncIndex(server, nil)
	if s.opts.Mode == config.ModeDirect {
		s.syncDirect()
	}
}

// settled reports whether a meta call need not wait for the upstreams any
// longer: no server is connecting without tools in the catalog (unless it
// is slow: a grace already ran out on it), and no ready server's tools are
// still on their way to it.
func (s *Server) settled() bool {
	statuses := s.up.Status()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, st := range statuses {
		_, held := s.tools[st.Server]
		switch {
		case st.State == upstream.StateConnecting && !held && !s.warm.slow[st.Server]:
			return false
		case st.State == upstream.StateReady && st.Tools > 0 && (!held || s.warm.fromFile[st.Server]):
			return false
		}
	}
	return true
}

// waitSettled holds a retrieve_tools or describe_tool made before Started
// until the upstreams are settled (see settled: the servers the warm file
// covers count as settled), for at most Options.StartGrace from the first
// call that waited, or until ctx ends.
func (s *Server) waitSettled(ctx context.Context) error {
	select {
	case <-s.started:
		return nil
	default:
	}
	s.warm.graceOnce.Do(func() { s.warm.graceEnd = time.Now().Add(s.opts.StartGrace) })
	grace := time.NewTimer(time.Until(s.warm.graceEnd))
	defer grace.Stop()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for !s.settled() {
		select {
		case <-s.started:
			return nil
		case <-grace.C:
			s.warmGraceOver()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// waitLaunched holds a call_tool made before Started until the upstreams
// are connecting (Options.Launched), or ctx ends; the upstream manager then
// waits for the target server itself.
func (s *Server) waitLaunched(ctx context.Context) error {
	if s.opts.Launched == nil {
		return s.waitStarted(ctx)
	}
	select {
	case <-s.started:
		return nil
	case <-s.opts.Launched:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// connectionLine is what a retrieve_tools answer ends with when some
// enabled servers are not connected (each named with its state, a
// misconfigured one with its problems, a down one with its last error, and for a
// connecting server with last known tools, how many of matches come from
// them) or are ready with tools not indexed yet (a line of its own, so the
// model asks again rather than concluding there is no such tool). Empty
// when every enabled server is ready and indexed.
func connectionLine(v upstreamView, matches []Match) string {
	fromServer := map[string]int{}
	for _, m := range matches {
		fromServer[m.Tool.Server]++
	}
	var parts []string
	for _, st := range v.statuses {
		if st.State == upstream.StateReady || st.State == upstream.StateDisabled {
			continue
		}
		part := fmt.Sprintf("%s (%s", st.Server, st.State)
		switch st.State {
		case upstream.StateMisconfigured:
			// The model cannot fix the config; it can tell the user what to.
			part += ": " + strings.TrimSuffix(st.LastError, ".") + "; the user must fix its entry in the mcproxy config"
		case upstream.StateDown:
			if st.LastError != "" { // a failed launch says why (issue 30)
				part += ": " + shortReason(st.LastError)
			}
		}
		switch n := fromServer[st.Server]; {
		case v.stale[st.Server] && n > 0:
			part += fmt.Sprintf("; %d of the matches above %s from its tool list of the last run, and call_tool waits for it to connect", n, plural(n, "is", "are"))
		case v.stale[st.Server]:
			part += "; searched in its tool list of the last run"
		default:
			part += "; its tools are not searched"
		}
		parts = append(parts, part+")")
	}
	var lines []string
	if len(parts) > 0 {
		lines = append(lines, "Not connected right now: "+strings.Join(parts, ", ")+".")
	}
	if len(v.indexing) > 0 {
		parts = parts[:0]
		for _, st := range v.indexing {
			parts = append(parts, fmt.Sprintf("%s (%d %s, not searched yet)", st.Server, st.Tools, plural(st.Tools, "tool", "tools")))
		}
		lines = append(lines, "Still indexing: "+strings.Join(parts, ", ")+"; ask again in a moment.")
	}
	return strings.Join(lines, "\n")
}

// maxReason caps the reason a down server gets in a retrieve_tools answer:
// every answer carries it, and a crashed child's stderr can be long.
const maxReason = 200

// shortReason is an upstream error on one line, cut to maxReason runes.
func shortReason(s string) string {
	s = strings.TrimSuffix(strings.Join(strings.Fields(s), " "), ".")
	if r := []rune(s); len(r) > maxReason {
		s = string(r[:maxReason-1]) + "…"
	}
	return s
}

// staleNote marks a describe_tool entry whose tool comes from the last run.
func staleNote(server string) string {
	return fmt.Sprintf("from the tool list of the last run: %q is still connecting, and call_tool waits for it", server)
}

// isStale reports whether server's catalog entries are last known tools.
func (s *Server) isStale(server string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.warm.fromFile[server]
}
