package gateway

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
)

// Conversations recognises which conversation a stateless request
// continues. Message ids are chained hashes (each covers everything before
// it), so a conversation is known by the id of the last client message it
// holds: a request containing that id extends the conversation (the id's
// position tells how much of the request is already held), and a request
// that does not (an edited or forked history) starts a new one. Matching
// scans from the request's end, so the longest known prefix wins.
//
// A scope (the x-mcproxy-session header's value, "" without it) keeps
// conversations apart: a request only continues a conversation of its own
// scope, and the first conversation of a scope takes the scope as its id.
//
// With a path, every change is appended to a JSON-lines file and the file
// is read back at start, so conversations are recognised across restarts.
// Methods are safe for concurrent use.
type Conversations struct {
	mu   sync.Mutex
	last map[string]string // scope\x00last id -> conversation
	key  map[string]string // conversation -> its key in last
	file *os.File
}

// indexRecord is one line of the index file.
type indexRecord struct {
	Conv  string `json:"conv"`
	Scope string `json:"scope,omitempty"`
	Last  string `json:"last"`
}

// OpenConversations loads the index at path (created when missing); an
// empty path keeps it in memory only. Close releases the file.
func OpenConversations(path string) (*Conversations, error) {
	c := &Conversations{last: map[string]string{}, key: map[string]string{}}
	if path == "" {
		return c, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("opening the conversation index: %w", err)
	}
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("opening the conversation index: %w", err)
	default:
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		lines := 0
		for sc.Scan() {
			lines++
			var r indexRecord
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Conv == "" || r.Last == "" {
				continue // a line cut by a crash: that step is forgotten
			}
			c.set(r.Conv, r.Scope, r.Last)
		}
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the conversation index: %w", err)
		}
		// One line is appended per request; past a few per conversation the
		// file is rewritten with the current state.
		if lines > 4*len(c.key)+64 {
			if err := c.compact(path); err != nil {
				return nil, err
			}
		}
	}
	if c.file, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return nil, fmt.Errorf("opening the conversation index: %w", err)
	}
	return c, nil
}

// compact rewrites the index at path with one line per conversation
// (temporary file, fsync, rename: a crash leaves the old or the new file).
func (c *Conversations) compact(path string) error {
	convs := make([]string, 0, len(c.key))
	for conv := range c.key {
		convs = append(convs, conv)
	}
	slices.Sort(convs)
	err := atomicfile.Write(path, atomicfile.Options{}, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		for _, conv := range convs {
			scope, last, _ := strings.Cut(c.key[conv], "\x00")
			b, _ := json.Marshal(indexRecord{Conv: conv, Scope: scope, Last: last})
			_, _ = w.Write(append(b, '\n'))
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("compacting the conversation index: %w", err)
	}
	return nil
}

// Close closes the index file.
func (c *Conversations) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return nil
	}
	err := c.file.Close()
	c.file = nil
	return err
}

func scopeKey(scope, id string) string { return scope + "\x00" + id }

func (c *Conversations) set(conv, scope, last string) {
	if old, ok := c.key[conv]; ok {
		delete(c.last, old)
	}
	k := scopeKey(scope, last)
	c.last[k] = conv
	c.key[conv] = k
}

// Match finds the conversation ids (a request's part ids, in order)
// continue within scope: the conversation and how many of ids it already
// holds. ok is false when none matches.
func (c *Conversations) Match(scope string, ids []string) (conv string, known int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(ids) - 1; i >= 0; i-- {
		if conv, ok := c.last[scopeKey(scope, ids[i])]; ok {
			return conv, i + 1, true
		}
	}
	return "", 0, false
}

// Advance records that conv now holds everything up to the part last.
func (c *Conversations) Advance(conv, scope, last string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(conv, scope, last)
	if c.file == nil {
		return nil
	}
	b, err := json.Marshal(indexRecord{Conv: conv, Scope: scope, Last: last})
	if err != nil {
		return err
	}
	if _, err := c.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the conversation index: %w", err)
	}
	return nil
}

// NewID names a new conversation of scope: the scope itself for its first
// conversation, otherwise the scope (or "gw") with a random suffix.
func (c *Conversations) NewID(scope string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if scope != "" {
		if _, taken := c.key[scope]; !taken {
			return scope
		}
	}
	base := scope
	if base == "" {
		base = "gw"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return base + "-" + hex.EncodeToString(b[:])
}

var validScope = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$`)

// ValidScope reports whether a session header value can name
// conversations: 1 to 100 of [A-Za-z0-9_.-], not starting with a dot (the
// conversation id, a directory name, adds a suffix to it).
func ValidScope(s string) bool { return validScope.MatchString(s) }
