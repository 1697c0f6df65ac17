package upstream

// This file remembers, across runs, the protocol revision each upstream
// settled on (Options.Revisions), so that a start does not probe again
// what the last run learned:
//
//   - a server remembered as 2025-11-25 (or earlier) is greeted with
//     initialize at once. Probing costs a server that ignores
//     server/discover up to 2 s, and a dual-revision stdio server that
//     refuses initialize after server/discover (the Go SDK's) a second
//     process start;
//   - a server remembered as 2026-07-28 is asked in it first, which is
//     what an unremembered one gets too: server/discover is its handshake,
//     and mcp-go falls back to initialize when the server answers it with
//     an error, so a stale record costs no more than none.
//
// A record counts only for the launch config it was made with (configKey):
// an edited command, env or URL probes again. A server remembered as
// 2025-11-25 that refuses initialize is negotiated with again at once, and
// any other failed initialize forgets the record, so a stale one never
// keeps a server unreachable. Pinned ("protocol") and legacy SSE servers
// are not probed, so nothing is remembered for them.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/config"
)

// RevisionsFile is the name of the revisions file in mcproxy's data
// directory.
const RevisionsFile = "revisions.json"

// revisionsFileVersion is the format of the revisions file; a file of
// another version is ignored (and rewritten as servers connect).
const revisionsFileVersion = 1

// What the server/discover probe got, as a revision record keeps it.
const (
	probeAnswered = "answered" // the server answered (2026-07-28, or both revisions)
	probeRefused  = "refused"  // it answered with an error (MethodNotFound)
	probeIgnored  = "ignored"  // no answer within the probe's bound
)

// revision is what is remembered of one server.
type revision struct {
	// Config is configKey of the server's config when it connected.
	Config string `json:"config"`
	// Protocol is the revision it settled on.
	Protocol string `json:"protocol"`
	// Probe is what its last server/discover probe got (probeAnswered,
	// probeRefused, probeIgnored); "" when none was sent.
	Probe string `json:"probe,omitempty"`
}

// legacy reports whether r tells to greet the server with initialize.
func (r revision) legacy() bool {
	return mcp.IsValidProtocolVersion(r.Protocol) && !mcp.IsModernProtocol(r.Protocol)
}

type revisionsFile struct {
	Version int                 `json:"version"`
	Servers map[string]revision `json:"servers"`
}

// RevisionStore keeps the revision records as one document (the
// revisions file's JSON) somewhere other than a file: a store shared by
// replicas. The records are a cache: a lost write costs a probe at the next
// start, nothing else.
type RevisionStore interface {
	// LoadRevisions returns the document last saved; nil when none was.
	LoadRevisions() ([]byte, error)
	// SaveRevisions replaces the document.
	SaveRevisions(data []byte) error
}

// fileRevisions is the revisions file.
type fileRevisions struct{ path string }

func (f fileRevisions) LoadRevisions() ([]byte, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func (f fileRevisions) SaveRevisions(data []byte) error {
	return atomicfile.WriteFile(f.path, data, atomicfile.Options{NoSync: true})
}

// revisions is the Manager's store of revision records. Its methods are
// safe for concurrent use; the store is written under mu, which also
// serializes the writes.
type revisions struct {
	store RevisionStore // nil = remembered for this run only
	where string        // the file's path, or what store is, for the log
	log   *zap.Logger

	mu      sync.Mutex
	servers map[string]revision
}

// loadRevisions reads the records at path. A file that is missing,
// unreadable or of another version is a run with nothing remembered: the
// file is a cache.
//
// store, when not nil, is used instead of the file.
func loadRevisions(path string, store RevisionStore, log *zap.Logger) *revisions {
	r := &revisions{store: store, where: "shared store", log: log, servers: map[string]revision{}}
	if store == nil {
		if path == "" {
			return r
		}
		r.store, r.where = fileRevisions{path}, path
	}
	data, err := r.store.LoadRevisions()
	if err == nil && data == nil {
		return r
	}
	var f revisionsFile
	if err == nil {
		err = json.Unmarshal(data, &f)
	}
	if err != nil {
		log.Warn("the remembered protocol revisions cannot be read; every server is negotiated with again (the file is rewritten as they connect)",
			zap.String("path", r.where), zap.Error(err))
		return r
	}
	if f.Version == revisionsFileVersion && f.Servers != nil {
		r.servers = f.Servers
	}
	return r
}

// lookup returns the record of server made with the config whose key is
// key.
func (r *revisions) lookup(server, key string) (revision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.servers[server]
	return rec, ok && rec.Config == key
}

// remember records rec for server, writing the file when it changed.
func (r *revisions) remember(server string, rec revision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.servers[server]; ok && old == rec {
		return
	}
	r.servers[server] = rec
	r.save()
}

// forget drops server's record, if it has one.
func (r *revisions) forget(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.servers[server]; !ok {
		return
	}
	delete(r.servers, server)
	r.save()
}

// keep drops the records of servers not in names (removed from the
// config); the file follows at the next write.
func (r *revisions) keep(names []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := make(map[string]bool, len(names))
	for _, n := range names {
		in[n] = true
	}
	maps.DeleteFunc(r.servers, func(name string, _ revision) bool { return !in[name] })
}

// save writes the records. r.mu must be held. A failed write is logged:
// the next start probes again, nothing else is lost.
func (r *revisions) save() {
	if r.store == nil {
		return
	}
	data, err := json.MarshalIndent(revisionsFile{Version: revisionsFileVersion, Servers: r.servers}, "", "  ")
	if err == nil {
		err = r.store.SaveRevisions(append(data, '\n'))
	}
	if err != nil {
		r.log.Warn("writing the remembered protocol revisions", zap.String("path", r.where), zap.Error(err))
	}
}

// configKey identifies what a server's revision depends on: what is
// launched or reached, and how (command, args, env, inherited env, cwd,
// URL, transport, pinned protocol). Headers and the rest are left out: a
// rotated token does not change the server that answers. The key is a
// SHA-256, so the env's secrets are not written out.
func configKey(sc config.ServerConfig) string {
	b, err := json.Marshal(struct {
		Command    string
		Args       []string
		Env        map[string]string // encoding/json sorts the keys
		InheritEnv config.InheritEnv
		Cwd        string
		URL        string
		Transport  string
		Protocol   string
	}{sc.Command, sc.Args, sc.Env, sc.InheritEnv, sc.Cwd, sc.URL, sc.TransportKind(), sc.Protocol})
	if err != nil {
		return "" // never: every field encodes
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// negotiates reports whether l's revision is negotiated (neither pinned
// nor fixed by the transport), and so whether it is remembered.
func (l *link) negotiates() bool {
	return l.cfg.Protocol == "" && l.kind != config.TransportSSE
}

// recall applies what an earlier run learned of l's server: a 2025-11-25
// server is greeted with initialize without the probe.
func (l *link) recall() {
	if !l.negotiates() {
		return
	}
	rec, ok := l.m.revs.lookup(l.name, configKey(l.cfg))
	if !ok {
		return
	}
	l.probe.Store(rec.Probe)
	l.legacy.Store(rec.legacy())
	// A server that answered the probe and still settled on 2026-07-28,
	// unpinned, does so only as statelessLegacy decided: it speaks
	// 2025-11-25 too, and is not moved back to it.
	l.stateless.Store(mcp.IsModernProtocol(rec.Protocol) && rec.Probe == probeAnswered && l.kind == config.TransportStreamableHTTP)
}

// probed notes what a handshake's server/discover probe got. mcp-go
// probes when asked for 2026-07-28 and falls back to initialize when the
// probe fails, so an initialize revision means it failed; an ignored probe
// is told from a refused one by time, as it waits out its bound.
func (l *link) probed(asked, got string, took time.Duration) {
	if !l.negotiates() || !mcp.IsModernProtocol(asked) {
		return
	}
	switch {
	case mcp.IsModernProtocol(got):
		l.probe.Store(probeAnswered)
	case took >= discoverProbe(l.init.d):
		l.probe.Store(probeIgnored)
	default:
		l.probe.Store(probeRefused)
	}
}

// settled records the revision l's server settled on.
func (l *link) settled(version string) {
	if !l.negotiates() || !mcp.IsValidProtocolVersion(version) {
		return
	}
	p, _ := l.probe.Load().(string)
	l.m.revs.remember(l.name, revision{Config: configKey(l.cfg), Protocol: version, Probe: p})
}

// staleRevision handles an initialize that failed after the probe was
// skipped because l's server was remembered as 2025-11-25 (by this run or
// an earlier one): the server may speak only 2026-07-28 now. The record is
// forgotten, so the next attempt negotiates; it reports whether to do so
// at once, which it does (when renegotiate allows) if the server refused
// initialize with an answer (a version error) rather than failing at the
// transport or timing out.
func (l *link) staleRevision(ictx context.Context, err error, renegotiate bool) bool {
	if !l.negotiates() || !l.legacy.Swap(false) {
		return false
	}
	l.m.revs.forget(l.name)
	// Over streamable HTTP a refused initialize (4xx) reaches here as
	// mcp-go's "legacy SSE server" error, its body dropped; this server
	// took a streamable-HTTP initialize before, so it is taken as a
	// refusal too (connect still tries SSE if negotiating fails).
	answered := !isConnErr(err) || errors.Is(err, transport.ErrLegacySSEServer)
	if !renegotiate || !answered || ictx.Err() != nil {
		l.log.Info("initialize failed on an upstream remembered as 2025-11-25; the next attempt probes with server/discover", zap.Error(err))
		return false
	}
	l.log.Info("the upstream refused initialize, though remembered as 2025-11-25; negotiating its revision again", zap.Error(err))
	return true
}
