package integrity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/filelock"
)

// FileName is the approvals file inside the data directory.
const FileName = "tool-approvals.json"

// Backend keeps the approvals of an installation: the approvals file of
// the data directory (NewStore) or a store shared by replicas
// (internal/pgstore).
type Backend interface {
	// Load reads the approvals; none yet is empty approvals.
	Load() (*Approvals, error)
	// Update runs fn on the current approvals under a lock that excludes
	// every other writer (other processes and replicas too) and writes
	// them back when fn reports a change. It returns the approvals as they
	// stand afterwards.
	Update(fn func(*Approvals) (bool, error)) (*Approvals, error)
	// Stamp identifies the approvals as last written: it changes when
	// anyone writes them. It is polled (Options.Poll), so it is cheap.
	Stamp() string
}

// Notifier is a Backend that also tells when another process wrote the
// approvals (PostgreSQL's LISTEN/NOTIFY), so a running proxy need not wait
// for its next poll. The channel has capacity 1 and is never closed.
type Notifier interface {
	Changes() <-chan struct{}
}

// Store is where a Reviewer and `mcproxy tools` keep the approvals: a
// Backend, the approvals file by default.
type Store struct {
	b    Backend
	path string
}

// NewStore is the store of the data directory dir (already expanded); ""
// keeps the approvals in memory only (tests, one-shot commands without a
// data directory).
func NewStore(dir string) *Store {
	if dir == "" {
		return &Store{b: &memBackend{}}
	}
	path := filepath.Join(dir, FileName)
	return &Store{b: &fileBackend{path: path}, path: path}
}

// NewStoreWith is a store kept by b.
func NewStoreWith(b Backend) *Store { return &Store{b: b} }

// Path is the approvals file's path; "" when they are not kept in a file.
func (s *Store) Path() string { return s.path }

// Approvals is the approvals file's content: per server, per tool, the
// approved definition and the one held for review.
type Approvals struct {
	// Servers holds every server ever seen; a server present here (even
	// with no tools) is no longer new.
	Servers map[string]map[string]*Entry `json:"servers"`
}

// Entry is one tool's record.
type Entry struct {
	// Approved is the definition the tool may run with; nil when it was
	// never approved.
	Approved *Version `json:"approved,omitempty"`
	// Pending is the definition the upstream offers now that is held for
	// review; nil when nothing is.
	Pending *Version `json:"pending,omitempty"`
}

// Version is one definition of a tool and when it was seen or approved.
type Version struct {
	Hash       string     `json:"hash"`
	Definition Definition `json:"definition"`
	// Reasons say why a pending version is held.
	Reasons []string  `json:"reasons,omitempty"`
	At      time.Time `json:"at"`
}

// Load reads the approvals; none yet is empty approvals.
func (s *Store) Load() (*Approvals, error) { return s.b.Load() }

// Update runs fn on the current approvals under the backend's lock and
// writes them back when fn reports a change. It returns the approvals as
// they stand afterwards.
func (s *Store) Update(fn func(*Approvals) (bool, error)) (*Approvals, error) {
	return s.b.Update(fn)
}

// stamp identifies one version of the approvals for the poller.
func (s *Store) stamp() string { return s.b.Stamp() }

// changes is the backend's notification channel; nil (never ready) when
// it has none.
func (s *Store) changes() <-chan struct{} {
	if n, ok := s.b.(Notifier); ok {
		return n.Changes()
	}
	return nil
}

// memBackend keeps the approvals in memory.
type memBackend struct {
	mu  sync.Mutex
	mem *Approvals
}

func (m *memBackend) Load() (*Approvals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mem == nil {
		m.mem = &Approvals{Servers: map[string]map[string]*Entry{}}
	}
	return m.mem.clone(), nil
}

func (m *memBackend) Update(fn func(*Approvals) (bool, error)) (*Approvals, error) {
	a, _ := m.Load()
	changed, err := fn(a)
	if err == nil && changed {
		m.mu.Lock()
		m.mem = a.clone()
		m.mu.Unlock()
	}
	return a, err
}

func (m *memBackend) Stamp() string { return "" }

// fileBackend is the approvals file. Every change is a read-modify-write
// under an exclusive lock on path+".lock" (flock where the platform has
// it), so the proxy recording a held tool and `mcproxy tools approve` never
// lose each other's writes; the file is replaced atomically and is 0600.
type fileBackend struct{ path string }

func (f *fileBackend) Load() (*Approvals, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Approvals{Servers: map[string]map[string]*Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tool approvals: %w", err)
	}
	return DecodeApprovals(b, f.path)
}

// DecodeApprovals reads approvals in the file's JSON form; where names
// the copy in errors.
func DecodeApprovals(b []byte, where string) (*Approvals, error) {
	var a Approvals
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("reading tool approvals %s: %w (fix or remove the file; removing it trusts every tool again on next start)", where, err)
	}
	if a.Servers == nil {
		a.Servers = map[string]map[string]*Entry{}
	}
	return &a, nil
}

func (f *fileBackend) Update(fn func(*Approvals) (bool, error)) (*Approvals, error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	unlock, err := filelock.Lock(context.Background(), f.path+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := f.Load()
	if err != nil {
		return nil, err
	}
	changed, err := fn(a)
	if err != nil || !changed {
		return a, err
	}
	return a, f.write(a)
}

func (f *fileBackend) write(a *Approvals) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding tool approvals: %w", err)
	}
	// atomicfile writes it 0600: the mode is part of the contract.
	if err := atomicfile.WriteFile(f.path, append(b, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("writing tool approvals: %w", err)
	}
	return nil
}

// Stamp is the file's modification time and size ("" when absent).
func (f *fileBackend) Stamp() string {
	fi, err := os.Stat(f.path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

// clone deep-copies a through JSON, the form it is stored in.
func (a *Approvals) clone() *Approvals {
	b, _ := json.Marshal(a)
	var c Approvals
	_ = json.Unmarshal(b, &c)
	if c.Servers == nil {
		c.Servers = map[string]map[string]*Entry{}
	}
	return &c
}

// Pending lists the server:tool ids held for review, sorted, limited to
// server (and tool) when given.
func (a *Approvals) Pending(server, tool string) []string {
	var out []string
	for srv, tools := range a.Servers {
		if server != "" && srv != server {
			continue
		}
		for name, e := range tools {
			if e.Pending != nil && (tool == "" || name == tool) {
				out = append(out, srv+":"+name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Approve makes the pending definitions of server (one tool when tool is
// not empty) the approved ones and returns the ids approved. Approving
// nothing is an error that says what is pending.
func (a *Approvals) Approve(server, tool string, now time.Time) ([]string, error) {
	ids := a.Pending(server, tool)
	if len(ids) == 0 {
		what := server
		if tool != "" {
			what += ":" + tool
		}
		if all := a.Pending("", ""); len(all) > 0 {
			return nil, fmt.Errorf("nothing of %s is held for approval; held now: %s", what, joinIDs(all))
		}
		return nil, fmt.Errorf("nothing of %s is held for approval (no tool is held)", what)
	}
	for _, id := range ids {
		srv, name := splitID(id)
		e := a.Servers[srv][name]
		v := *e.Pending
		v.Reasons, v.At = nil, now
		e.Approved, e.Pending = &v, nil
	}
	return ids, nil
}
