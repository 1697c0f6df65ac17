package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// dirSnapshot is every file of a session directory and its bytes.
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Peek returns what the Turn that follows with the same messages returns,
// and records, archives, numbers and changes nothing.
func TestPeekIsTheNextTurnAndChangesNothing(t *testing.T) {
	opts := testOptions(t)
	opts.verify = true
	ffs := &failingFS{failWriteAfter: 1 << 30}
	opts.FS = ffs
	h := openHost(t, opts, "s")
	rng := newRand(7)
	fillUntilNudge(t, h, rng)
	ctx := context.Background()
	for i, pending := range [][]Message{
		nil,
		{text("", noa.RoleUser, noa.CTText, "where were we?")},
		// a call and its oversize result (cut to size, with a pointer to
		// the ref it will get)
		func() []Message {
			c := toolCall("fs:read", []byte(`{"path":"/big"}`))
			c.ID, c.ToolCallID = "peek-call", "peek-1"
			return []Message{c, toolResult(c, words(rng, 5000))}
		}(),
	} {
		before, files, state, writes := dirSnapshot(t, h.Dir()), len(h.Messages()), h.State(), ffs.writes
		peek, err := h.Peek(ctx, pending...)
		if err != nil {
			t.Fatalf("peek %d: %v", i, err)
		}
		if ffs.writes != writes {
			t.Fatalf("peek %d wrote %d times, want none", i, ffs.writes-writes)
		}
		if diff := cmp.Diff(before, dirSnapshot(t, h.Dir())); diff != "" {
			t.Fatalf("peek %d changed the session directory:\n%s", i, diff)
		}
		if len(h.Messages()) != files || !sameState(state, h.State()) {
			t.Fatalf("peek %d changed the host: %d messages (had %d); state: %s", i, len(h.Messages()), files, stateDiff(state, h.State()))
		}
		turn, err := h.Turn(ctx, pending...)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if diff := cmp.Diff(turn, peek, cmp.AllowUnexported(noa.ProtectedRange{})); diff != "" {
			t.Fatalf("peek %d differs from the turn that followed (-turn +peek):\n%s", i, diff)
		}
		if i == 2 && (peek.Recorded[1].Original == "" || !strings.Contains(peek.Recorded[1].Text, noa.TruncationMarker)) {
			t.Fatalf("peek %d: the oversize result was not shown cut: %+v", i, peek.Recorded[1].Original)
		}
	}
	if _, err := h.Peek(ctx, Message{CoreMessage: noa.CoreMessage{Role: "robot", ContentType: noa.CTText}}); err == nil || !strings.Contains(err.Error(), "role") {
		t.Fatalf("peek of an invalid message: %v, want the role refused", err)
	}
	if m := h.verify.mismatches; len(m) > 0 {
		t.Fatalf("engine and ProcessTurn differ: %v", m)
	}
}

// A host opened with its own noa configuration paces against its window
// and keeps emergency truncation (the gateway's case); the Manager's other
// hosts keep the shared options, truncation off.
func TestHostWithOwnConfig(t *testing.T) {
	opts := testOptions(t)
	opts.MaxResultTokens = 1 << 20 // no size cuts: truncation is what is tested
	m := NewManager(opts)
	defer m.Close()
	cfg := noa.DefaultConfig(8000)
	cfg.Truncate.Threshold = 0.95
	gw, err := m.HostWith("gateway-conv", HostOptions{Noa: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	mcp, err := m.Host("mcp-session")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.HostWith("gateway-conv", HostOptions{}); err != nil || again != gw {
		t.Fatalf("HostWith of an open session: %v, %v; want the open host", again, err)
	}
	rng := newRand(3)
	var gwTurn, mcpTurn Turn
	for i := 0; i < 12; i++ {
		body := words(rng, 900)
		gwTurn = call(t, gw, "fs:read", body)
		mcpTurn = call(t, mcp, "fs:read", body)
	}
	if gwTurn.ContextLimit != 8000 || mcpTurn.ContextLimit != 20000 {
		t.Fatalf("context limits: gateway %d, mcp %d; want 8000 and 20000", gwTurn.ContextLimit, mcpTurn.ContextLimit)
	}
	if gwTurn.Projected > 8000 {
		t.Fatalf("the gateway host's view is %d tokens, over its 8000-token window: truncation did not run", gwTurn.Projected)
	}
	if mcpTurn.Projected != mcpTurn.Total {
		t.Fatalf("the MCP host's view (%d tokens) differs from its stream (%d): something was cut", mcpTurn.Projected, mcpTurn.Total)
	}
	bad := noa.DefaultConfig(0)
	bad.ModelContextLimit = 0
	if _, err := m.HostWith("no-window", HostOptions{Noa: &bad}); err == nil || !strings.Contains(err.Error(), "ModelContextLimit") {
		t.Fatalf("HostWith without a window: %v, want an error naming ModelContextLimit", err)
	}
}
