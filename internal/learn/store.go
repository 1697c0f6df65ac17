// Package learn keeps what the agent's own choices teach tool retrieval.
//
// When a search misses, the agent searches again in other words or describes
// a tool, and then calls the tool it needed; that successful call labels the
// words of the searches before it (an episode, see Episodes). Store keeps,
// per tool, the query words that led to it and that the tool's own text does
// not hold, with how many episodes taught each and when one last did. The
// index searches them in a field of their own (index.Options.Learned), below
// the tool's own words.
//
// Words that discriminate nothing (held by many tools) and one-off words
// (numbers, names) are held back until two episodes taught them. Evidence is
// bounded per tool and in total, and fades: a word unused for a half-life
// counts one episode less, and one unused for Expire is dropped. The store
// is one JSON file under the data directory (0600), per installation, or a
// Backend shared by replicas; it is never sent anywhere.
package learn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/filelock"
)

// Defaults of Options.
const (
	DefaultMaxTermsPerTool = 24
	DefaultMaxTools        = 10000
	DefaultHalfLife        = 60 * 24 * time.Hour
	DefaultExpire          = 365 * 24 * time.Hour
	// MaxWeight is the most a word repeats in a tool's learned field: three
	// episodes' worth; more evidence does not lift a tool further.
	MaxWeight = 3
	// FileName is the store's file under the data directory.
	FileName = "learned.json"
)

// Options configure a Store.
type Options struct {
	// Path is the store's file; empty keeps it in memory only.
	Path string
	// Backend, when set, keeps the evidence instead of the file Path
	// names: a store shared by replicas (internal/pgstore).
	Backend Backend
	// MaxTermsPerTool and MaxTools bound what is kept: past them, the
	// weakest, oldest evidence goes first. Zero means the defaults.
	MaxTermsPerTool, MaxTools int
	// HalfLife: a word untaught for this long weighs one episode less.
	// Expire: one untaught for this long is dropped. Zero means the
	// defaults.
	HalfLife, Expire time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Word is a query word (as the index analyzed it) offered as evidence.
type Word struct {
	Term string
	// Hold marks a word that needs two episodes before it counts: one held
	// by many tools, a number, a name.
	Hold bool
}

// Evidence is what was learned of one word for one tool.
type Evidence struct {
	Term     string    `json:"term"`
	Episodes int       `json:"episodes"`
	Last     time.Time `json:"last"`
	Held     bool      `json:"held,omitempty"`
}

// Store is the learned evidence of one installation. Its methods are safe
// for concurrent use.
type Store struct {
	opts Options
	mu   sync.Mutex
	// tools maps a tool id to its evidence, sorted by term.
	tools map[string][]Evidence
	// backend keeps the evidence; nil keeps it in memory only.
	backend Backend
	// stamp is the backend's as last read or written, so Refresh can tell
	// another process's edit (`mcproxy learned forget`).
	stamp string
}

// Backend keeps the evidence of an installation between runs and between
// processes: the learned-words file by default.
type Backend interface {
	// Load reads every tool's evidence; none yet is an empty map.
	Load() (map[string][]Evidence, error)
	// Update reads the evidence as stored, lets fn change it in place and
	// stores the result, excluding every other Update (of this process or
	// another, or another replica) from the read to the write, so that two
	// writers never lose each other's episodes. It returns what it stored;
	// when fn fails, nothing is stored and fn's error is returned.
	Update(fn func(tools map[string][]Evidence) error) (map[string][]Evidence, error)
	// Stamp identifies the evidence as last written: it changes when
	// anyone writes it, so Refresh can tell another process's edit.
	Stamp() string
}

type file struct {
	Version int                   `json:"version"`
	Tools   map[string][]Evidence `json:"tools"`
}

const fileVersion = 1

// fileBackend is the learned-words file.
type fileBackend struct{ path string }

// Stamp is the file's modification time and size ("" when absent).
func (f fileBackend) Stamp() string {
	fi, err := os.Stat(f.path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d/%d", fi.ModTime().UnixNano(), fi.Size())
}

// Load reads the store's file (absent: empty).
func (f fileBackend) Load() (map[string][]Evidence, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]Evidence{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading learned words: %w", err)
	}
	return Decode(data, f.path)
}

// Decode reads evidence in the file's JSON form; where names the copy in
// errors.
func Decode(data []byte, where string) (map[string][]Evidence, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("reading learned words from %s: %w (run `mcproxy learned reset` to start over)", where, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("reading learned words from %s: version %d, want %d (run `mcproxy learned reset` to start over)", where, f.Version, fileVersion)
	}
	if f.Tools == nil {
		f.Tools = map[string][]Evidence{}
	}
	return f.Tools, nil
}

// Encode is tools in the file's JSON form.
func Encode(tools map[string][]Evidence) ([]byte, error) {
	data, err := json.MarshalIndent(file{Version: fileVersion, Tools: tools}, "", " ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// updateTimeout bounds the wait for another process's update of the file
// (a write of a few kilobytes): past it the update fails, naming the lock.
const updateTimeout = 10 * time.Second

// Update holds the file's lock (<path>.lock) across reading it, fn and
// writing it atomically, readable by its owner only: a serving mcproxy
// and `mcproxy learned forget` (or two servers on one data dir) never
// write over each other's evidence.
func (f fileBackend) Update(fn func(tools map[string][]Evidence) error) (map[string][]Evidence, error) {
	ctx, cancel := context.WithTimeout(context.Background(), updateTimeout)
	defer cancel()
	release, err := filelock.Lock(ctx, f.path+".lock")
	if err != nil {
		return nil, err
	}
	defer release()
	tools, err := f.Load()
	if err != nil {
		return nil, err
	}
	if err := fn(tools); err != nil {
		return nil, err
	}
	data, err := Encode(tools)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(f.path, data, atomicfile.Options{}); err != nil {
		return nil, err
	}
	return tools, nil
}

// Open loads the store at opts.Path (an absent file is an empty store).
func Open(opts Options) (*Store, error) {
	if opts.MaxTermsPerTool <= 0 {
		opts.MaxTermsPerTool = DefaultMaxTermsPerTool
	}
	if opts.MaxTools <= 0 {
		opts.MaxTools = DefaultMaxTools
	}
	if opts.HalfLife <= 0 {
		opts.HalfLife = DefaultHalfLife
	}
	if opts.Expire <= 0 {
		opts.Expire = DefaultExpire
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{opts: opts, tools: map[string][]Evidence{}, backend: opts.Backend}
	if s.backend == nil && opts.Path != "" {
		s.backend = fileBackend{opts.Path}
	}
	if s.backend == nil {
		return s, nil
	}
	tools, st, err := s.load()
	if err != nil {
		return nil, err
	}
	s.tools, s.stamp = tools, st
	s.expire()
	return s, nil
}

// load reads the backend, with the stamp it had just before.
func (s *Store) load() (map[string][]Evidence, string, error) {
	st := s.backend.Stamp()
	tools, err := s.backend.Load()
	return tools, st, err
}

// Refresh reloads the evidence when another process changed it since this
// store last read or wrote it, and returns the tools whose searchable words
// changed. A file that cannot be read leaves the store as it was.
func (s *Store) Refresh() ([]string, error) {
	if s.backend == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backend.Stamp() == s.stamp {
		return nil, nil
	}
	tools, st, err := s.load()
	if err != nil {
		s.stamp = st // reported once, not on every search
		return nil, err
	}
	now := s.opts.Now()
	var changed []string
	for id := range tools {
		if _, had := s.tools[id]; !had {
			changed = append(changed, id)
		}
	}
	old := s.tools
	s.tools, s.stamp = tools, st
	for id := range tools {
		if _, had := old[id]; had && !slices.Equal(s.termsOf(old[id], now), s.termsLocked(id, now)) {
			changed = append(changed, id)
		}
	}
	for id := range old {
		if _, has := tools[id]; !has {
			changed = append(changed, id)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// Teach records one episode's evidence for tool: each word gains an
// episode. It returns whether the tool's searchable words (Terms) changed,
// and saves the store.
func (s *Store) Teach(tool string, words []Word) (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	before := s.termsLocked(tool, now)
	err = s.changeLocked(func(tools map[string][]Evidence) {
		ev := tools[tool]
		for _, w := range words {
			i, found := slices.BinarySearchFunc(ev, w.Term, func(e Evidence, t string) int { return cmp.Compare(e.Term, t) })
			if found {
				ev[i].Episodes++
				ev[i].Last = now
				ev[i].Held = ev[i].Held && w.Hold
				continue
			}
			ev = slices.Insert(ev, i, Evidence{Term: w.Term, Episodes: 1, Last: now, Held: w.Hold})
		}
		tools[tool] = s.bound(ev, now)
		s.boundTools(tools)
	})
	return !slices.Equal(before, s.termsLocked(tool, now)), err
}

// Terms returns tool's learned words as the index takes them: each word
// that counts, repeated by its weight (episodes, less one per half-life
// untaught, at most MaxWeight), sorted.
func (s *Store) Terms(tool string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.termsLocked(tool, s.opts.Now())
}

func (s *Store) termsLocked(tool string, now time.Time) []string {
	return s.termsOf(s.tools[tool], now)
}

func (s *Store) termsOf(ev []Evidence, now time.Time) []string {
	var out []string
	for _, e := range ev {
		for range s.weight(e, now) {
			out = append(out, e.Term)
		}
	}
	return out
}

// weight is how many times e counts now: zero while held back with one
// episode, else its episodes less one per half-life since the last, capped.
func (s *Store) weight(e Evidence, now time.Time) int {
	n := e.Episodes
	if e.Held && n < 2 {
		return 0
	}
	n -= int(now.Sub(e.Last) / s.opts.HalfLife)
	return max(0, min(n, MaxWeight))
}

// List returns every tool's evidence, by tool id.
func (s *Store) List() map[string][]Evidence {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]Evidence, len(s.tools))
	for id, ev := range s.tools {
		out[id] = slices.Clone(ev)
	}
	return out
}

// Weight is how much e counts in searches now (0: not yet, or faded).
func (s *Store) Weight(e Evidence) int { return s.weight(e, s.opts.Now()) }

// Forget drops what was learned for tool and reports whether there was
// anything.
func (s *Store) Forget(tool string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := false
	err := s.changeLocked(func(tools map[string][]Evidence) {
		_, had = tools[tool]
		delete(tools, tool)
	})
	return had, err
}

// Reset drops everything learned and returns the tools that had evidence.
func (s *Store) Reset() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	err := s.changeLocked(func(tools map[string][]Evidence) {
		for id := range tools {
			ids = append(ids, id)
		}
		clear(tools)
	})
	slices.Sort(ids)
	return ids, err
}

// bound drops ev's expired words and, past MaxTermsPerTool, the weakest
// (fewest episodes, then oldest).
func (s *Store) bound(ev []Evidence, now time.Time) []Evidence {
	ev = slices.DeleteFunc(ev, func(e Evidence) bool { return now.Sub(e.Last) > s.opts.Expire })
	if len(ev) <= s.opts.MaxTermsPerTool {
		return ev
	}
	byStrength := slices.Clone(ev)
	slices.SortFunc(byStrength, func(a, b Evidence) int {
		if c := cmp.Compare(b.Episodes, a.Episodes); c != 0 {
			return c
		}
		return b.Last.Compare(a.Last)
	})
	keep := byStrength[:s.opts.MaxTermsPerTool]
	slices.SortFunc(keep, func(a, b Evidence) int { return cmp.Compare(a.Term, b.Term) })
	return keep
}

// boundTools drops the tools of tools taught longest ago past MaxTools.
func (s *Store) boundTools(tools map[string][]Evidence) {
	for len(tools) > s.opts.MaxTools {
		oldest, at := "", time.Time{}
		for id, ev := range tools {
			last := time.Time{}
			for _, e := range ev {
				if e.Last.After(last) {
					last = e.Last
				}
			}
			if oldest == "" || last.Before(at) || last.Equal(at) && id < oldest {
				oldest, at = id, last
			}
		}
		delete(tools, oldest)
	}
}

// expire drops every expired word (at load).
func (s *Store) expire() {
	now := s.opts.Now()
	for id, ev := range s.tools {
		if ev = s.bound(ev, now); len(ev) == 0 {
			delete(s.tools, id)
		} else {
			s.tools[id] = ev
		}
	}
}

// changeLocked applies fn to the evidence as stored, under the backend's
// Update, and makes the result the store's: fn sees what other processes
// and replicas wrote since this store last read, so nothing they taught
// is lost. Without a backend, or when the update fails, fn changes the
// store's own copy, which serves this process until the next Refresh.
func (s *Store) changeLocked(fn func(tools map[string][]Evidence)) error {
	apply := func(tools map[string][]Evidence) error {
		fn(tools)
		for id, ev := range tools {
			if len(ev) == 0 {
				delete(tools, id)
			}
		}
		return nil
	}
	if s.backend == nil {
		return apply(s.tools)
	}
	tools, err := s.backend.Update(apply)
	if err != nil {
		_ = apply(s.tools)
		return fmt.Errorf("saving learned words: %w", err)
	}
	s.tools, s.stamp = tools, s.backend.Stamp()
	return nil
}
