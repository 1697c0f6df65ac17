package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConversationsMatch(t *testing.T) {
	c, err := OpenConversations("")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Match("", []string{"a", "b"}); ok {
		t.Fatal("an empty index matched")
	}
	conv := c.NewID("")
	if !strings.HasPrefix(conv, "gw-") {
		t.Errorf("got id %q, want gw-...", conv)
	}
	must(t, c.Advance(conv, "", "b")) // holds a, b

	tests := []struct {
		name  string
		scope string
		ids   []string
		conv  string
		known int
		ok    bool
	}{
		{"extension", "", []string{"a", "b", "c", "d"}, conv, 2, true},
		{"retry of the same request", "", []string{"a", "b"}, conv, 2, true},
		{"fork before the last", "", []string{"a", "x"}, "", 0, false},
		{"prefix only", "", []string{"a"}, "", 0, false},
		{"other scope", "s1", []string{"a", "b", "c"}, "", 0, false},
	}
	for _, tc := range tests {
		got, known, ok := c.Match(tc.scope, tc.ids)
		if got != tc.conv || known != tc.known || ok != tc.ok {
			t.Errorf("%s: got (%q, %d, %v), want (%q, %d, %v)", tc.name, got, known, ok, tc.conv, tc.known, tc.ok)
		}
	}

	// A fork gets its own conversation; the longest known prefix wins.
	fork := c.NewID("")
	if fork == conv {
		t.Fatal("a second conversation got the first one's id")
	}
	must(t, c.Advance(fork, "", "x")) // holds a, x
	must(t, c.Advance(conv, "", "d")) // holds a, b, c, d
	if got, known, _ := c.Match("", []string{"a", "x", "y"}); got != fork || known != 2 {
		t.Errorf("fork's continuation: got (%q, %d), want (%q, 2)", got, known, fork)
	}
	if got, known, _ := c.Match("", []string{"a", "b", "c", "d", "e"}); got != conv || known != 4 {
		t.Errorf("main continuation: got (%q, %d), want (%q, 4)", got, known, conv)
	}
	// Once a conversation moved on, its old last id no longer matches: a
	// request built on it is a fork.
	if _, _, ok := c.Match("", []string{"a", "b", "z"}); ok {
		t.Error("a request diverging after the conversation moved on matched it")
	}

	// Scopes: the first conversation takes the scope as its id.
	if id := c.NewID("team.run-1"); id != "team.run-1" {
		t.Errorf("got %q, want the scope itself", id)
	}
	must(t, c.Advance("team.run-1", "team.run-1", "b"))
	if id := c.NewID("team.run-1"); !strings.HasPrefix(id, "team.run-1-") {
		t.Errorf("second conversation of a scope: got %q, want team.run-1-...", id)
	}
	if got, _, _ := c.Match("team.run-1", []string{"a", "b", "q"}); got != "team.run-1" {
		t.Errorf("scoped match: got %q", got)
	}
	if got, _, _ := c.Match("", []string{"a", "b", "q"}); got == "team.run-1" {
		t.Error("an unscoped request matched a scoped conversation")
	}
}

func TestConversationsPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gateway", "conversations.jsonl")
	c, err := OpenConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, c.Advance("gw-1", "", "b"))
	must(t, c.Advance("gw-1", "", "d"))
	must(t, c.Advance("s", "s", "q"))
	must(t, c.Close())
	// A line cut short by a crash is ignored.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"conv":"gw-1","la`)
	f.Close()

	c, err = OpenConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, known, _ := c.Match("", []string{"a", "b", "c", "d", "e"}); got != "gw-1" || known != 4 {
		t.Errorf("after reopening: got (%q, %d), want (gw-1, 4)", got, known)
	}
	if _, _, ok := c.Match("", []string{"a", "b", "x"}); ok {
		t.Error("a superseded last id matched after reopening")
	}
	if got, _, _ := c.Match("s", []string{"q"}); got != "s" {
		t.Errorf("scoped after reopening: got %q", got)
	}
	if id := c.NewID("s"); id == "s" {
		t.Error("a reopened index handed out a taken scope id")
	}
}

func TestConversationsCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conversations.jsonl")
	c, err := OpenConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		must(t, c.Advance("gw-1", "", fmt.Sprintf("id%d", i)))
	}
	must(t, c.Advance("s", "s", "q"))
	must(t, c.Close())
	c, err = OpenConversations(path)
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
	if got, known, _ := c.Match("", []string{"x", "id199"}); got != "gw-1" || known != 2 {
		t.Errorf("after compaction: got (%q, %d)", got, known)
	}
	if got, _, _ := c.Match("s", []string{"q"}); got != "s" {
		t.Errorf("scoped after compaction: got %q", got)
	}
}

func TestValidScope(t *testing.T) {
	for s, want := range map[string]bool{"abc": true, "a.b-c_d": true, ".hidden": false, "": false, "a/b": false,
		strings.Repeat("a", 100): true, strings.Repeat("a", 101): false} {
		if got := ValidScope(s); got != want {
			t.Errorf("ValidScope(%q): got %v, want %v", s, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
