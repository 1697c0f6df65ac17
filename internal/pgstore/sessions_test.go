package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/gateway"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/session"
	"github.com/mcproxy/mcproxy/internal/testenv"
)

// replica is one mcproxy's session manager over the shared store, with a
// data directory of its own.
func replica(t *testing.T, st session.Store) *session.Manager {
	t.Helper()
	cfg := noa.DefaultConfig(20000)
	cfg.Compress.MinCompressRange = 3000
	m := session.NewManager(session.Options{Dir: t.TempDir(), Noa: cfg, MaxResultTokens: 2000, StateEvery: 1, Store: st})
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("closing a replica's sessions: %v", err)
		}
	})
	return m
}

// gatewayHost opens conversation id the way the gateway does (its own noa
// configuration, only its own sessions).
func gatewayHost(t *testing.T, m *session.Manager, id string) *session.Host {
	t.Helper()
	cfg := noa.DefaultConfig(20000)
	cfg.Compress.MinCompressRange = 3000
	h, err := m.HostWith(id, session.HostOptions{Noa: &cfg, OnlyOwn: true})
	if err != nil {
		t.Fatalf("HostWith(%s): %v", id, err)
	}
	return h
}

// exchange records one tool call and its result (text) and runs the turn.
func exchange(t *testing.T, h *session.Host, text string) session.Turn {
	t.Helper()
	ctx := context.Background()
	rec, err := h.Record(ctx, session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "fs:read", Text: `{"path":"/x"}`}})
	if err != nil {
		t.Fatalf("recording a call: %v", err)
	}
	turn, err := h.Turn(ctx, session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "fs:read", ToolCallID: rec[0].ToolCallID, Text: text}, CutToSize: true})
	if err != nil {
		t.Fatalf("recording a result: %v", err)
	}
	return turn
}

// compressArgs compresses the first eight messages of a session.
var compressArgs = []byte(`{"content":[{"start":"m00001","end":"m00008","topic":"reads",` +
	`"summary":"Read the data files; facts: alpha and bravo are set, the retry loop in host.go:212 is fine, nothing else changed."}]}`)

// TestSessionsAcrossReplicas: a session written on one replica continues
// on another with the same messages, refs, blocks and archives (the ref a
// cut result points at and a Compress block read back there), and each
// replica sees what the other appended since.
func TestSessionsAcrossReplicas(t *testing.T) {
	st := open(t, testenv.Postgres(t)).Sessions()
	a, b := replica(t, st), replica(t, st)
	rng := rand.New(rand.NewSource(7))
	const id = "gw-shared"

	ha := gatewayHost(t, a, id)
	for range 12 {
		exchange(t, ha, testenv.Prose(rng, 400))
	}
	big := exchange(t, ha, testenv.Prose(rng, 3000)) // cut to size: its original is archived
	args := compressArgs
	p, err := ha.Compress(context.Background(), args)
	if err != nil || p.IsError || len(p.Blocks) != 1 {
		t.Fatalf("Compress on replica A: %v %+v", err, p)
	}
	wantMsgs, wantState := ha.Messages(), ha.State()

	hb := gatewayHost(t, b, id)
	if rep := hb.Report(); len(rep.Warnings) > 0 {
		t.Errorf("replica B opened the session with repairs: %v", rep.Warnings)
	}
	if diff := cmp.Diff(wantMsgs, hb.Messages()); diff != "" {
		t.Fatalf("replica B's messages differ from A's (-A +B):\n%s", diff)
	}
	gotState := hb.State()
	if len(gotState.Blocks) != 1 || gotState.Blocks[0].BlockID != wantState.Blocks[0].BlockID || gotState.NextBlockID != wantState.NextBlockID {
		t.Fatalf("replica B's blocks: got %+v, want A's %+v", gotState.Blocks, wantState.Blocks)
	}
	if diff := cmp.Diff(wantState.MessageRefs, gotState.MessageRefs); diff != "" {
		t.Errorf("replica B's refs differ (-A +B):\n%s", diff)
	}
	// The block A archived reads back on B.
	page, err := hb.ReadArchive(context.Background(), session.ReadArchiveArgs{Block: p.Blocks[0]})
	if err != nil {
		t.Fatalf("read_archive of A's block on B: %v", err)
	}
	if !strings.Contains(page.Text, wantMsgs[1].Text[:200]) {
		t.Errorf("read_archive of A's block on B lacks the first result's text; got %.300q", page.Text)
	}
	// So does the original of the result A cut to size, by its ref.
	var ref string
	for _, m := range big.View {
		if r, ok := hb.Ref(m.ID); ok && m.Role == noa.RoleTool {
			ref = r.Ref
		}
	}
	if ref == "" {
		t.Fatal("no ref for the cut result in B's refs")
	}
	page, err = hb.ReadArchive(context.Background(), session.ReadArchiveArgs{Ref: ref, Limit: 1 << 20})
	if err != nil {
		t.Fatalf("read_archive of ref %s on B: %v", ref, err)
	}
	if want := wantOriginal(t, ha, ref); page.Text != want || len(want) < 5000 {
		t.Errorf("read_archive of %s on B: got %d chars, want the %d A serves", ref, len(page.Text), len(want))
	}

	// B moves the session on; A, asked again, reopens it from the store.
	exchange(t, hb, testenv.Prose(rng, 300))
	ha2 := gatewayHost(t, a, id)
	if ha2 == ha {
		t.Fatal("replica A handed out its old host, which does not hold B's records")
	}
	if diff := cmp.Diff(hb.Messages(), ha2.Messages()); diff != "" {
		t.Fatalf("replica A's messages after B's turn differ (-B +A):\n%s", diff)
	}
	// A host that is current is kept.
	if again := gatewayHost(t, a, id); again != ha2 {
		t.Error("replica A reopened a host that holds every record")
	}
}

// wantOriginal is the full text of the result with ref, as its host reads it.
func wantOriginal(t *testing.T, h *session.Host, ref string) string {
	t.Helper()
	page, err := h.ReadArchive(context.Background(), session.ReadArchiveArgs{Ref: ref, Limit: 1 << 20})
	if err != nil {
		t.Fatalf("read_archive of %s on A: %v", ref, err)
	}
	return page.Text
}

// TestSessionAppendStale: a replica holding a session another replica has
// moved on since records nothing (the store refuses the batch), and its
// next HostWith reopens the session with every record.
func TestSessionAppendStale(t *testing.T) {
	st := open(t, testenv.Postgres(t)).Sessions()
	a, b := replica(t, st), replica(t, st)
	rng := rand.New(rand.NewSource(8))
	const id = "gw-race"
	ha := gatewayHost(t, a, id)
	exchange(t, ha, "first")
	hb := gatewayHost(t, b, id)
	exchange(t, hb, "second, on B")
	_, err := ha.Record(context.Background(), session.Message{CoreMessage: noa.CoreMessage{Role: noa.RoleUser, ContentType: noa.CTText, Text: testenv.Prose(rng, 20)}})
	if !errors.Is(err, session.ErrStale) || !errors.Is(err, session.ErrNotRecorded) {
		t.Fatalf("recording on the stale replica: got %v, want ErrStale and ErrNotRecorded", err)
	}
	head, _, err := st.Head(context.Background(), id)
	if err != nil || head != 4 {
		t.Fatalf("store head: got %d (%v), want 4 (two exchanges)", head, err)
	}
	ha2 := gatewayHost(t, a, id)
	if got := len(ha2.Messages()); got != 4 {
		t.Errorf("replica A reopened with %d messages, want 4", got)
	}
	exchange(t, ha2, "third, on A")
}

// orderStore is the real store, noting the order of its writes.
type orderStore struct {
	session.Store
	mu  sync.Mutex
	ops []string
}

func (o *orderStore) note(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, s)
}

func (o *orderStore) Append(ctx context.Context, id string, first int64, lines []byte) error {
	kind := "append"
	if strings.Contains(string(lines), `"compress":`) {
		kind = "append compress"
	}
	o.note(kind)
	return o.Store.Append(ctx, id, first, lines)
}

func (o *orderStore) PutState(ctx context.Context, id string, seq int64, b []byte) error {
	var s struct {
		State noa.CompressionState `json:"state"`
	}
	_ = json.Unmarshal(b, &s)
	o.note(fmt.Sprintf("state %d", len(s.State.Blocks)))
	return o.Store.PutState(ctx, id, seq, b)
}

func (o *orderStore) PutFile(ctx context.Context, id, rel string, b []byte) error {
	if strings.HasPrefix(rel, "archive/tier") {
		o.note("archive")
	}
	return o.Store.PutFile(ctx, id, rel, b)
}

// TestSessionStoreOrder: a Compress stores its archive before the
// transcript record of the call, and that before a state with its block.
func TestSessionStoreOrder(t *testing.T) {
	st := &orderStore{Store: open(t, testenv.Postgres(t)).Sessions()}
	m := replica(t, st)
	h := gatewayHost(t, m, "gw-order")
	rng := rand.New(rand.NewSource(9))
	for range 12 {
		exchange(t, h, testenv.Prose(rng, 400))
	}
	st.mu.Lock()
	st.ops = nil
	st.mu.Unlock()
	args := compressArgs
	if p, err := h.Compress(context.Background(), args); err != nil || p.IsError {
		t.Fatalf("Compress: %v %+v", err, p)
	}
	st.mu.Lock()
	ops := slices.Clone(st.ops)
	st.mu.Unlock()
	arch, rec, state := slices.Index(ops, "archive"), slices.Index(ops, "append compress"), slices.Index(ops, "state 1")
	if arch < 0 || rec < 0 || state < 0 || !(arch < rec && rec < state) {
		t.Errorf("got writes %v, want the archive, then the compress record, then the state with its block", ops)
	}
}

// TestSessionsPruneStore: retention with the store removes the sessions
// no replica wrote within the period, from the store and the working copy.
func TestSessionsPruneStore(t *testing.T) {
	st := open(t, testenv.Postgres(t)).Sessions()
	m := replica(t, st)
	h := gatewayHost(t, m, "gw-old")
	exchange(t, h, "old")
	if err := m.Release("gw-old"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := st.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "gw-old" || list[0].Records != 2 || list[0].Bytes == 0 {
		t.Fatalf("List: got %+v (%v), want gw-old with 2 records", list, err)
	}
	opts := session.Options{Dir: t.TempDir(), Store: st}
	rep, err := session.Prune(opts, 1<<40, false) // nothing that old
	if err != nil || len(rep.Removed) != 0 {
		t.Fatalf("Prune of old sessions only: %+v %v", rep, err)
	}
	opts.Now = func() time.Time { return list[0].Updated.Add(time.Hour) }
	rep, err = session.Prune(opts, time.Minute, false)
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].ID != "gw-old" {
		t.Fatalf("Prune: got %+v (%v), want gw-old removed", rep, err)
	}
	if _, ok, err := st.Head(ctx, "gw-old"); err != nil || ok {
		t.Errorf("gw-old still in the store after Prune (%v)", err)
	}
}

// TestConversationsIndex: the shared index matches within a scope only,
// the longest known prefix first, and forgets a conversation with its
// session.
func TestConversationsIndex(t *testing.T) {
	s := open(t, testenv.Postgres(t))
	idx, other := s.Conversations(), open(t, s.dsn).Conversations() // a second replica
	ctx := context.Background()
	for _, id := range []string{"gw-a", "gw-b"} {
		if err := s.Sessions().PutFile(ctx, id, session.HostConfigFile, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	alice, bob := gateway.Scope{Cred: "aa"}, gateway.Scope{Cred: "bb"}
	named := gateway.Scope{Cred: "aa", Name: "work"}
	if err := idx.Advance("gw-a", alice, "p2"); err != nil {
		t.Fatal(err)
	}
	if err := idx.Advance("gw-b", alice, "p4"); err != nil {
		t.Fatal(err)
	}
	ids := []string{"p1", "p2", "p3", "p4", "p5"}
	for _, tc := range []struct {
		name  string
		scope gateway.Scope
		ids   []string
		conv  string
		known int
	}{
		{"longest prefix", alice, ids, "gw-b", 4},
		{"shorter history", alice, ids[:3], "gw-a", 2},
		{"another credential", bob, ids, "", 0},
		{"another session name", named, ids, "", 0},
		{"no known part", alice, []string{"q1"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv, known, ok := other.Match(tc.scope, tc.ids)
			if conv != tc.conv || known != tc.known || ok != (tc.conv != "") {
				t.Errorf("Match: got %q %d %v, want %q %d", conv, known, ok, tc.conv, tc.known)
			}
		})
	}
	// A conversation keeps its scope: another credential cannot move it.
	if err := other.Advance("gw-a", bob, "p5"); err != nil {
		t.Fatal(err)
	}
	if conv, _, ok := idx.Match(bob, ids); ok {
		t.Errorf("bob's Advance of alice's conversation made it match for bob (%s)", conv)
	}
	if err := s.Sessions().Remove(ctx, "gw-b"); err != nil {
		t.Fatal(err)
	}
	if conv, known, _ := idx.Match(alice, ids); conv != "gw-a" || known != 2 {
		t.Errorf("after removing gw-b's session: got %q %d, want gw-a 2", conv, known)
	}
}
