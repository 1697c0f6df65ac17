package gateway

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
)

// sessionHosts is SessionHosts over a session manager in dir, closed when
// the test ends.
func sessionHosts(t testing.TB, dir string) *SessionHosts {
	t.Helper()
	count := CountTokens(nil)
	m := session.NewManager(session.Options{Dir: dir, Count: count})
	t.Cleanup(func() { _ = m.Close() })
	// noa's configuration as mcproxy serve gives it (the noa section's
	// knobs, for MCP sessions too).
	return &SessionHosts{Sessions: m, Count: count, Config: func(window int) noa.Config {
		c, _ := session.EngineConfig(config.NoaConfig{ContextLimit: window})
		return c
	}}
}

// withAnyHosts is withHosts for any Hosts.
func withAnyHosts(h Hosts) rigOption {
	return func(o *Options) {
		o.Hosts = h
		o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: 8000}}
		o.Config.CompressAt = engageAtOnce
	}
}

// replayCompress runs the hidden-Compress conversation of
// TestHiddenCompressRound (a first request answered after one hidden
// round, then the client's next request) through hosts, and returns what
// the upstream model received, in order.
func replayCompress(t *testing.T, hosts Hosts, more ...rigOption) [][]byte {
	t.Helper()
	model := &compressingModel{}
	r := newRig(t, model.script, append([]rigOption{withAnyHosts(hosts)}, more...)...)
	msgs := conversation(8, 1200, "What was in file 7?")
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": "And file 3?"})
	for _, m := range [][]any{msgs, next} {
		o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: anthropicBody(m)})
		if !o.OK {
			t.Fatalf("SDK: %s", o.Message)
		}
	}
	var out [][]byte
	for _, q := range r.up.Requests() {
		out = append(out, q.Body)
	}
	return out
}

// modelReads is what a forwarded request gives the model to read: its
// system prompt and messages (the tools' descriptions are each Hosts' own).
func modelReads(t *testing.T, body []byte) []byte {
	t.Helper()
	var b struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	return append(append(b.System, '\n'), b.Messages...)
}

// TestSessionHostsProjectAsMemoryHosts sends the same conversation, with a
// hidden Compress round, through the on-disk session hosts and through
// MemoryHosts, the reference: the model reads the same bytes every time.
func TestSessionHostsProjectAsMemoryHosts(t *testing.T) {
	want := replayCompress(t, &MemoryHosts{})
	got := replayCompress(t, sessionHosts(t, t.TempDir()))
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("upstream got %d requests through the session hosts and %d through MemoryHosts, want 3 each", len(got), len(want))
	}
	for i := range want {
		if g, w := modelReads(t, got[i]), modelReads(t, want[i]); !bytes.Equal(g, w) {
			t.Errorf("request %d: the session hosts forwarded\n%s\nMemoryHosts forwarded\n%s", i, g, w)
		}
	}
}

// TestSessionHostsPersist checks that a conversation lives on disk: its
// session is listed with its block, and after a restart (new manager, new
// gateway, the same conversation index) the client's next request
// continues it, compression included, recording nothing twice.
func TestSessionHostsPersist(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	index := filepath.Join(dir, "conversations.jsonl")
	withIndex := func(o *Options) {
		c, err := OpenConversations(index, ConversationsOptions{})
		if err != nil {
			t.Fatal(err)
		}
		o.Conversations = c
	}
	first := sessionHosts(t, sessions)
	replayCompress(t, first, withIndex)
	list, err := session.List(session.Options{Dir: sessions})
	if err != nil || len(list) != 1 || list[0].ActiveBlocks != 1 {
		t.Fatalf("sessions: %+v (%v), want one conversation with one block", list, err)
	}
	id := list[0].ID
	before := len(mustHost(t, first, id).Messages())
	if err := first.Sessions.Close(); err != nil {
		t.Fatal(err)
	}

	second := sessionHosts(t, sessions)
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("again") }, withAnyHosts(second), withIndex)
	msgs := conversation(8, 1200, "What was in file 7?")
	msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": "And file 3?"},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": "And file 5?"})
	if o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: anthropicBody(msgs)}); !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	body := r.up.Requests()[0].Body
	if !bytes.Contains(body, []byte("[Compressed conversation section]")) || bytes.Contains(body, []byte("line of file 2. line of file 2.")) {
		t.Errorf("after the restart the conversation was not projected through its compression:\n%s", modelReads(t, body))
	}
	after := mustHost(t, second, id).Messages()
	if got, want := len(after), before+2; got != want {
		t.Errorf("the session holds %d messages after the restart's request, want %d (the answer and the new question)", got, want)
	}
	if list, _ := session.List(session.Options{Dir: sessions}); len(list) != 1 {
		t.Errorf("got %d sessions after the restart, want the one conversation continued", len(list))
	}
}

// TestSessionHostsPeekCreatesNothing counts a new conversation's tokens:
// no session directory is made.
func TestSessionHostsPeekCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	hosts := sessionHosts(t, dir)
	msgs := []noa.CoreMessage{{ID: "u1", Role: noa.RoleUser, ContentType: noa.CTText, Text: "hello there"}}
	turn, err := hosts.Peek(t.Context(), "abc", 8000, msgs)
	if err != nil || len(turn.View) != 1 || turn.Refs["u1"].Ref != "m00001" {
		t.Fatalf("Peek: %+v, %v; want the one message with ref m00001", turn, err)
	}
	if list, _ := session.List(session.Options{Dir: dir}); len(list) != 0 {
		t.Errorf("Peek created sessions %+v, want none", list)
	}
}

func mustHost(t *testing.T, h *SessionHosts, id string) Host {
	t.Helper()
	host, err := h.Host(t.Context(), id, 8000)
	if err != nil {
		t.Fatal(err)
	}
	return host
}
