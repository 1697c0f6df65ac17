package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	conv := NewID()
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
	fork := NewID()
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
	mine := NewID()
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
