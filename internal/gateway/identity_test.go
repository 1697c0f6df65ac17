package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcproxy/mcproxy/internal/authheader"
)

func TestConversationsMatch(t *testing.T) {
	c, err := OpenConversations("", ConversationsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	anon, other := Scope{Cred: "c0"}, Scope{Cred: "c1"}
	if _, _, ok := c.Match(anon, []string{"a", "b"}); ok {
		t.Fatal("an empty index matched")
	}
	conv := newID()
	if !strings.HasPrefix(conv, "gw-") || len(conv) != len("gw-")+32 {
		t.Errorf("got id %q, want gw- and 32 hex digits", conv)
	}
	must(t, c.Advance(conv, anon, "b")) // holds a, b

	tests := []struct {
		name  string
		scope Scope
		ids   []string
		conv  string
		known int
		ok    bool
	}{
		{"extension", anon, []string{"a", "b", "c", "d"}, conv, 2, true},
		{"retry of the same request", anon, []string{"a", "b"}, conv, 2, true},
		{"fork before the last", anon, []string{"a", "x"}, "", 0, false},
		{"prefix only", anon, []string{"a"}, "", 0, false},
		{"named", Scope{Cred: "c0", Name: "s1"}, []string{"a", "b", "c"}, "", 0, false},
		{"other credential", other, []string{"a", "b", "c"}, "", 0, false},
	}
	for _, tc := range tests {
		got, known, ok := c.Match(tc.scope, tc.ids)
		if got != tc.conv || known != tc.known || ok != tc.ok {
			t.Errorf("%s: got (%q, %d, %v), want (%q, %d, %v)", tc.name, got, known, ok, tc.conv, tc.known, tc.ok)
		}
	}

	// A fork gets its own conversation; the longest known prefix wins.
	fork := newID()
	if fork == conv {
		t.Fatal("a second conversation got the first one's id")
	}
	must(t, c.Advance(fork, anon, "x")) // holds a, x
	must(t, c.Advance(conv, anon, "d")) // holds a, b, c, d
	if got, known, _ := c.Match(anon, []string{"a", "x", "y"}); got != fork || known != 2 {
		t.Errorf("fork's continuation: got (%q, %d), want (%q, 2)", got, known, fork)
	}
	if got, known, _ := c.Match(anon, []string{"a", "b", "c", "d", "e"}); got != conv || known != 4 {
		t.Errorf("main continuation: got (%q, %d), want (%q, 4)", got, known, conv)
	}
	// Once a conversation moved on, its old last id no longer matches: a
	// request built on it is a fork.
	if _, _, ok := c.Match(anon, []string{"a", "b", "z"}); ok {
		t.Error("a request diverging after the conversation moved on matched it")
	}

	// A name scopes within a credential: the same name under another
	// credential is another conversation.
	named, theirs := Scope{Cred: "c0", Name: "team.run-1"}, Scope{Cred: "c1", Name: "team.run-1"}
	mine := newID()
	must(t, c.Advance(mine, named, "b"))
	if got, _, _ := c.Match(named, []string{"a", "b", "q"}); got != mine {
		t.Errorf("named match: got %q, want %q", got, mine)
	}
	for _, s := range []Scope{theirs, {Cred: "c0"}, {Name: "team.run-1"}} {
		if got, _, ok := c.Match(s, []string{"a", "b", "q"}); ok && got == mine {
			t.Errorf("scope %+v matched the conversation of %+v", s, named)
		}
	}
}

func TestConversationsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway", "conversations.jsonl")
	c, err := OpenConversations(path, ConversationsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	anon, named := Scope{Cred: "c0"}, Scope{Cred: "c0", Name: "s"}
	must(t, c.Advance("gw-1", anon, "b"))
	must(t, c.Advance("gw-1", anon, "d"))
	must(t, c.Advance("gw-2", named, "q"))
	must(t, c.Close())
	// A line cut short by a crash is ignored.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"conv":"gw-1","la`)
	f.Close()

	c, err = OpenConversations(path, ConversationsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, known, _ := c.Match(anon, []string{"a", "b", "c", "d", "e"}); got != "gw-1" || known != 4 {
		t.Errorf("after reopening: got (%q, %d), want (gw-1, 4)", got, known)
	}
	if _, _, ok := c.Match(anon, []string{"a", "b", "x"}); ok {
		t.Error("a superseded last id matched after reopening")
	}
	if got, _, _ := c.Match(named, []string{"q"}); got != "gw-2" {
		t.Errorf("named after reopening: got %q, want gw-2", got)
	}
}

func TestConversationsCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.jsonl")
	c, err := OpenConversations(path, ConversationsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	anon, named := Scope{Cred: "c0"}, Scope{Cred: "c0", Name: "s"}
	for i := 0; i < 200; i++ {
		must(t, c.Advance("gw-1", anon, fmt.Sprintf("id%d", i)))
	}
	must(t, c.Advance("gw-2", named, "q"))
	must(t, c.Close())
	c, err = OpenConversations(path, ConversationsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("compacted index has %d lines, want 2:\n%s", n, b)
	}
	if got, known, _ := c.Match(anon, []string{"x", "id199"}); got != "gw-1" || known != 2 {
		t.Errorf("after compaction: got (%q, %d)", got, known)
	}
	if got, _, _ := c.Match(named, []string{"q"}); got != "gw-2" {
		t.Errorf("named after compaction: got %q", got)
	}
}

func TestValidSessionName(t *testing.T) {
	for s, want := range map[string]bool{"abc": true, "a.b-c_d": true, ".hidden": true, "": false, "a/b": false, "a\x00b": false,
		strings.Repeat("a", 100): true, strings.Repeat("a", 101): false} {
		if got := ValidSessionName(s); got != want {
			t.Errorf("ValidSessionName(%q): got %v, want %v", s, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestConversationsPrune removes a conversation's session directory: Prune
// forgets it, and the index opened again has no record of it.
func TestConversationsPrune(t *testing.T) {
	dir := t.TempDir()
	sessions, path := filepath.Join(dir, "sessions"), filepath.Join(dir, "conversations.jsonl")
	for _, id := range []string{"gw-kept", "gw-gone", "gw-later"} {
		must(t, os.MkdirAll(filepath.Join(sessions, id), 0o700))
	}
	c, err := OpenConversations(path, ConversationsOptions{Sessions: sessions})
	if err != nil {
		t.Fatal(err)
	}
	s := Scope{Cred: "c0"}
	must(t, c.Advance("gw-kept", s, "a"))
	must(t, c.Advance("gw-gone", s, "b"))
	must(t, c.Advance("gw-later", s, "c"))
	must(t, os.RemoveAll(filepath.Join(sessions, "gw-gone")))
	if n := c.Prune(sessions); n != 1 || c.size() != 2 {
		t.Errorf("Prune: got %d forgotten, %d left; want 1 and 2", n, c.size())
	}
	if _, _, ok := c.Match(s, []string{"b"}); ok {
		t.Error("a pruned conversation still matched")
	}
	if got, _, _ := c.Match(s, []string{"a"}); got != "gw-kept" {
		t.Errorf("the kept conversation: got %q", got)
	}
	must(t, c.Close())

	// Removed while the index was closed (mcproxy sessions prune): dropped
	// at the next open, and from the file.
	must(t, os.RemoveAll(filepath.Join(sessions, "gw-later")))
	c, err = OpenConversations(path, ConversationsOptions{Sessions: sessions})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.size() != 1 {
		t.Errorf("reopened with %d conversations, want 1", c.size())
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "gw-gone") || strings.Contains(string(b), "gw-later") || !strings.Contains(string(b), "gw-kept") {
		t.Errorf("the index file still lists removed conversations, or lost the kept one:\n%s", b)
	}
}

// TestConversationsDropUnscoped reads an index written before
// conversations were scoped by credential: its records open nothing, and
// the drop is logged once.
func TestConversationsDropUnscoped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.jsonl")
	old := `{"conv":"gw-0a1b2c3d4e5f","last":"b"}` + "\n" + `{"conv":"team","scope":"team","last":"q"}` + "\n" +
		`{"conv":"team","scope":"team","last":"r"}` + "\n"
	must(t, os.WriteFile(path, []byte(old), 0o600))
	core, logs := observer.New(zapcore.InfoLevel)
	c, err := OpenConversations(path, ConversationsOptions{Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.size() != 0 {
		t.Errorf("loaded %d unscoped conversations, want none", c.size())
	}
	for _, s := range []Scope{{}, {Cred: credentialScope(anthropicAPI, http.Header{}, "")}, {Name: "team"}} {
		for _, last := range []string{"b", "q", "r"} {
			if conv, _, ok := c.Match(s, []string{last}); ok {
				t.Errorf("scope %+v matched %s", s, conv)
			}
		}
	}
	if e := logs.All(); len(e) != 1 || e[0].ContextMap()["conversations"] != int64(2) {
		t.Errorf("got logs %+v, want one saying 2 conversations were dropped", e)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("the index file kept the unscoped records:\n%s", b)
	}
}

func TestCredentialScope(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Add(kv[i], kv[i+1])
		}
		return out
	}
	anon := credentialScope(anthropicAPI, h(), "")
	a := credentialScope(anthropicAPI, h("x-api-key", "sk-a"), "")
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"the same key as a bearer token", credentialScope(anthropicAPI, h("Authorization", "Bearer sk-a"), ""), a},
		{"mcproxy's own token beside the key", credentialScope(anthropicAPI, h("x-api-key", "sk-a", "Authorization", "Bearer tok"), "tok"), a},
		{"mcproxy's own token alone", credentialScope(anthropicAPI, h("Authorization", "Bearer tok"), "tok"), anon},
		{"OpenAI's key, as Anthropic's", credentialScope(openaiAPI, h("Authorization", "Bearer sk-a"), ""), a},
		{"x-api-key is not OpenAI's credential", credentialScope(openaiAPI, h("x-api-key", "sk-a"), ""), anon},
		{"the mcproxy header is no credential", credentialScope(anthropicAPI, h(authheader.Token, "tok"), "tok"), anon},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, tc.got, tc.want)
		}
	}
	others := map[string]string{"none": anon, "sk-a": a}
	for _, k := range []string{"sk-b", "sk-a ", "Bearer sk-a"} {
		s := credentialScope(anthropicAPI, h("x-api-key", k), "")
		for name, o := range others {
			if s == o {
				t.Errorf("key %q has the scope of %s", k, name)
			}
		}
		others[k] = s
		if strings.Contains(s, k) || len(s) != 64 {
			t.Errorf("scope %q of key %q: want 64 hex digits, not the key", s, k)
		}
	}
}

// TestLockMapEmpties runs requests of one conversation that hold, wait
// for and give up its lock: once none holds or waits, the map is empty.
func TestLockMapEmpties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		release, err := g.lock(t.Context(), "gw-a")
		if err != nil {
			t.Fatal(err)
		}
		gaveUp := make(chan error, 1)
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			_, err := g.lock(ctx, "gw-a")
			gaveUp <- err
		}()
		waited := make(chan struct{})
		go func() {
			defer close(waited)
			r, err := g.lock(t.Context(), "gw-a")
			if err == nil {
				r()
			}
		}()
		synctest.Wait() // both wait for the lock
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled waiter got %v", err)
		}
		release()
		<-waited
		other, err := g.lock(t.Context(), "gw-b")
		if err != nil {
			t.Fatal(err)
		}
		other()
		if n := len(g.locks); n != 0 {
			t.Errorf("the lock map holds %d conversations after every request ended, want 0", n)
		}
	})
}
