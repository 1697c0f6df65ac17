package gateway

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/mcproxy/mcproxy/internal/atomicfile"
	"github.com/mcproxy/mcproxy/internal/authheader"
)

// Conversations recognises which conversation a stateless request
// continues. Message ids are chained hashes (each covers everything before
// it), so a conversation is known by the id of the last client message it
// holds: a request containing that id extends the conversation (the id's
// position tells how much of the request is already held), and a request
// that does not (an edited or forked history) starts a new one. Matching
// scans from the request's end, so the longest known prefix wins.
//
// A Scope keeps conversations apart: a request only continues a
// conversation of its own scope (the credential it sent, and the name its
// session header gives). A conversation's id is the gateway's own ("gw-"
// and 128 random bits, newID), never anything a client sent: the only ids
// the gateway opens are those this index holds, so no header can name an
// MCP client's session, and an id seen elsewhere (on /status, in
// `mcproxy sessions`) opens nothing without the credential that made it.
//
// With a path, every change is appended to a JSON-lines file and the file
// is read back at start, so conversations are recognised across restarts.
// Methods are safe for concurrent use.
type Conversations struct {
	mu   sync.Mutex
	last map[string]string // scope key \x00 last id -> conversation
	key  map[string]string // conversation -> its key in last
	file *os.File
}

// Index is how the gateway finds a request's conversation (see
// Conversations, which keeps it in this process and a file, and pgstore's,
// shared by replicas). Its methods are safe for concurrent use.
type Index interface {
	// Match finds the conversation ids (a request's part ids, in order)
	// continue within scope s: the conversation and how many of ids it
	// already holds. ok is false when none matches.
	Match(s Scope, ids []string) (conv string, known int, ok bool)
	// Advance records that conv, of scope s, now holds everything up to
	// the part last.
	Advance(conv string, s Scope, last string) error
}

var _ Index = (*Conversations)(nil)

// Scope is whom a conversation belongs to.
type Scope struct {
	// Cred is the hash of the credential the request carried
	// (credentialScope); never the credential itself.
	Cred string
	// Name is the session header's value, "" without it: a name the
	// client gives its conversations, looked up only within Cred.
	Name string
}

// indexRecord is one line of the index file. A record without Cred was
// written before conversations were scoped by credential: it is dropped
// at load, since nothing says whose it was.
type indexRecord struct {
	Conv string `json:"conv"`
	Cred string `json:"cred,omitempty"`
	Name string `json:"name,omitempty"`
	Last string `json:"last"`
}

// ConversationsOptions configure OpenConversations.
type ConversationsOptions struct {
	// Sessions is the sessions directory (<data_dir>/sessions). When set,
	// a conversation whose session directory is gone (removed by
	// retention or `mcproxy sessions prune`) is dropped at load. "" keeps
	// every record.
	Sessions string
	// Logger receives the count of records dropped at load (nil = no-op).
	Logger *zap.Logger
}

// OpenConversations loads the index at path (created when missing); an
// empty path keeps it in memory only. Close releases the file.
func OpenConversations(path string, opts ConversationsOptions) (*Conversations, error) {
	c := &Conversations{last: map[string]string{}, key: map[string]string{}}
	if path == "" {
		return c, nil
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
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
		lines, legacy := 0, map[string]bool{}
		for sc.Scan() {
			lines++
			var r indexRecord
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Conv == "" || r.Last == "" {
				continue // a line cut by a crash: that step is forgotten
			}
			if r.Cred == "" {
				legacy[r.Conv] = true
				continue
			}
			c.set(r.Conv, Scope{Cred: r.Cred, Name: r.Name}, r.Last)
		}
		err := sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the conversation index: %w", err)
		}
		if len(legacy) > 0 {
			log.Warn("dropped conversations recorded before the gateway scoped them by credential: their next request starts a new conversation",
				zap.Int("conversations", len(legacy)))
		}
		gone := 0
		if opts.Sessions != "" {
			gone = c.Prune(opts.Sessions)
		}
		// One line is appended per request; past a few per conversation the
		// file is rewritten with the current state, as it is when records
		// were dropped (they must not come back at the next load).
		if lines > 4*len(c.key)+64 || len(legacy) > 0 || gone > 0 {
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
			s, last := splitKey(c.key[conv])
			b, _ := json.Marshal(indexRecord{Conv: conv, Cred: s.Cred, Name: s.Name, Last: last})
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

// key is the index's key of a conversation of scope s whose last part is
// id. Cred is hex and Name holds no NUL (ValidSessionName), so the key
// splits back unambiguously.
func (s Scope) key(id string) string { return s.Cred + "\x00" + s.Name + "\x00" + id }

// splitKey is the inverse of Scope.key.
func splitKey(k string) (Scope, string) {
	cred, rest, _ := strings.Cut(k, "\x00")
	name, last, _ := strings.Cut(rest, "\x00")
	return Scope{Cred: cred, Name: name}, last
}

func (c *Conversations) set(conv string, s Scope, last string) {
	if old, ok := c.key[conv]; ok {
		delete(c.last, old)
	}
	k := s.key(last)
	c.last[k] = conv
	c.key[conv] = k
}

// Match finds the conversation ids (a request's part ids, in order)
// continue within scope: the conversation and how many of ids it already
// holds. ok is false when none matches.
func (c *Conversations) Match(s Scope, ids []string) (conv string, known int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(ids) - 1; i >= 0; i-- {
		if conv, ok := c.last[s.key(ids[i])]; ok {
			return conv, i + 1, true
		}
	}
	return "", 0, false
}

// Advance records that conv, of scope s, now holds everything up to the
// part last.
func (c *Conversations) Advance(conv string, s Scope, last string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(conv, s, last)
	if c.file == nil {
		return nil
	}
	b, err := json.Marshal(indexRecord{Conv: conv, Cred: s.Cred, Name: s.Name, Last: last})
	if err != nil {
		return err
	}
	if _, err := c.file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the conversation index: %w", err)
	}
	return nil
}

// Prune forgets every conversation whose session directory under
// sessions is gone (removed by retention or `mcproxy sessions prune`) and
// returns how many. It changes the index in memory only: the file's
// records of those conversations are dropped when it is next opened.
func (c *Conversations) Prune(sessions string) int {
	c.mu.Lock()
	convs := make([]string, 0, len(c.key))
	for conv := range c.key {
		convs = append(convs, conv)
	}
	c.mu.Unlock()
	gone := func(conv string) bool {
		_, err := os.Stat(filepath.Join(sessions, conv))
		return errors.Is(err, fs.ErrNotExist)
	}
	n := 0
	for _, conv := range convs {
		// A stat each outside the lock, so requests go on meanwhile; again
		// under it for the few that are gone, since a request may have
		// opened (and so recreated) the session in between.
		if !gone(conv) {
			continue
		}
		c.mu.Lock()
		if k, ok := c.key[conv]; ok && gone(conv) {
			delete(c.last, k)
			delete(c.key, conv)
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// size is how many conversations the index holds.
func (c *Conversations) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.key)
}

// newID names a new conversation: "gw-" and 128 random bits, an id no
// client can name or guess, apart from the MCP front's ("mcp-...",
// "stdio-...").
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return "gw-" + hex.EncodeToString(b[:])
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// ValidSessionName reports whether a session header value can name
// conversations: 1 to 100 of [A-Za-z0-9_.-].
func ValidSessionName(s string) bool { return validName.MatchString(s) }

// credentialDomain separates the hashes credentialScope makes from any
// other use of SHA-256 over the same secret.
const credentialDomain = "mcproxy gateway conversation scope v1\x00"

// tokenScope narrows a credential scope to the client token (its name)
// the request came with (internal/clientauth), so that two clients of one
// provider key with different tokens never continue each other's
// conversations. No token ("": auth_token, or none) keeps cred as it is.
func tokenScope(cred, token string) string {
	if token == "" {
		return cred
	}
	d := sha256.New()
	d.Write([]byte(credentialDomain))
	fmt.Fprintf(d, "client token\x00%s\x00%d:%s\x00", cred, len(token), token)
	return hex.EncodeToString(d.Sum(nil))
}

// credentialScope is the Scope.Cred of a request carrying header h to api:
// the hex SHA-256, domain-separated, of the credential it sends the
// provider (anthropic: x-api-key, and Authorization; openai:
// Authorization), an Authorization carrying mcproxy's own authToken left
// out. A bearer token counts without its "Bearer " prefix, so one key sent
// as x-api-key or as a bearer token is one credential. A request with no
// credential gets the hash of nothing: one scope for every such client.
func credentialScope(a api, h http.Header, authToken string) string {
	d := sha256.New()
	d.Write([]byte(credentialDomain))
	add := func(v string) { fmt.Fprintf(d, "%d:%s\x00", len(v), v) } // length-prefixed: no two lists hash alike
	if a == anthropicAPI {
		for _, v := range h.Values("X-Api-Key") {
			add(v)
		}
	}
	for _, v := range h.Values("Authorization") {
		// Parsed as the guard parses it (authheader.Bearer), so every
		// spelling of mcproxy's own token is left out, as it is stripped.
		tok, isBearer := authheader.Bearer(v)
		if authToken != "" && isBearer && tok == authToken {
			continue // mcproxy's own token, not the provider's credential
		}
		if isBearer {
			v = tok
		}
		add(v)
	}
	return hex.EncodeToString(d.Sum(nil))
}
