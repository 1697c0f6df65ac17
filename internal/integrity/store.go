package integrity

import (
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
)

// FileName is the approvals file inside the data directory.
const FileName = "tool-approvals.json"

// Store is the approvals file. Every change is a read-modify-write under
// an exclusive lock on FileName+".lock" (flock where the platform has it),
// so the proxy recording a held tool and `mcproxy tools approve` never
// lose each other's writes; the file is replaced atomically and is 0600.
type Store struct {
	path string

	mu  sync.Mutex
	mem *Approvals // the approvals of a store without a file
}

// NewStore is the store of the data directory dir (already expanded); ""
// keeps the approvals in memory only (tests, one-shot commands without a
// data directory).
func NewStore(dir string) *Store {
	if dir == "" {
		return &Store{}
	}
	return &Store{path: filepath.Join(dir, FileName)}
}

// Path is the approvals file's path.
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

// Load reads the approvals; a missing file is empty approvals.
func (s *Store) Load() (*Approvals, error) {
	if s.path == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.mem == nil {
			s.mem = &Approvals{Servers: map[string]map[string]*Entry{}}
		}
		return s.mem.clone(), nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Approvals{Servers: map[string]map[string]*Entry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading tool approvals: %w", err)
	}
	var a Approvals
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("reading tool approvals %s: %w (fix or remove the file; removing it trusts every tool again on next start)", s.path, err)
	}
	if a.Servers == nil {
		a.Servers = map[string]map[string]*Entry{}
	}
	return &a, nil
}

// Update runs fn on the current approvals under the lock and writes them
// back when fn reports a change. It returns the approvals as they stand
// afterwards.
func (s *Store) Update(fn func(*Approvals) (bool, error)) (*Approvals, error) {
	if s.path == "" {
		a, _ := s.Load()
		changed, err := fn(a)
		if err == nil && changed {
			s.mu.Lock()
			s.mem = a.clone()
			s.mu.Unlock()
		}
		return a, err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the data directory: %w", err)
	}
	unlock, err := lockFile(s.path + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, err := s.Load()
	if err != nil {
		return nil, err
	}
	changed, err := fn(a)
	if err != nil || !changed {
		return a, err
	}
	return a, s.write(a)
}

func (s *Store) write(a *Approvals) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding tool approvals: %w", err)
	}
	// atomicfile writes it 0600: the mode is part of the contract.
	if err := atomicfile.WriteFile(s.path, append(b, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("writing tool approvals: %w", err)
	}
	return nil
}

// stamp identifies one version of the file for the poller.
type stamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func (s *Store) stamp() stamp {
	if s.path == "" {
		return stamp{}
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return stamp{}
	}
	return stamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
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
