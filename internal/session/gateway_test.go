package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// The tests in this file drive a host the way the LLM gateway will: every
// model request brings messages of any role with ids of the gateway's own
// (stable hashes, the provider's tool ids), which it records before asking
// for the projected view; the model's Compress calls are applied through
// the host, and its read_archive calls answered by the host and recorded by
// the gateway like any tool call and result.

// gatewayStep is what one request of the conversation produced, compared
// between two hosts driven alike.
type gatewayStep struct {
	Request  int
	View     []noa.CoreMessage
	Nudge    string
	Refs     map[string]MessageRef
	Recorded []Message
	Panel    string
	Page     string

	Total, Projected int
}

// gatewayConversation plays the requests of a scripted conversation,
// appending what each produced to steps. history is the conversation as
// the client holds it and sends it whole with every request.
type gatewayConversation struct {
	t       *testing.T
	history []Message
	steps   []gatewayStep
}

func text(id string, role noa.Role, ct noa.ContentType, s string) Message {
	return Message{CoreMessage: noa.CoreMessage{ID: id, Role: role, ContentType: ct, Text: s}}
}

// request plays request i on h: the client's whole conversation, of which
// the gateway records the messages the host does not hold yet, a turn, and
// what the model does with the answer.
func (g *gatewayConversation) request(h *Host, i int) {
	t := g.t
	t.Helper()
	ctx := context.Background()
	rng := newRand(int64(1000 + i))
	var msgs []Message
	if i == 0 {
		msgs = append(msgs, text("sys", noa.RoleSystem, noa.CTText, "You are a careful coding agent."))
	}
	callID := fmt.Sprintf("toolu_%02d", i)
	size := 500
	if i%7 == 3 {
		size = 4000 // over MaxResultTokens: cut, its original archived
	}
	result := text(fmt.Sprintf("t%d", i), noa.RoleTool, noa.CTToolResult, fmt.Sprintf("FACT-%d: ", i)+words(rng, size))
	result.ToolName, result.ToolCallID, result.CutToSize = "fs:read_file", callID, true
	call := text(fmt.Sprintf("a%d.call", i), noa.RoleAssistant, noa.CTToolCall, fmt.Sprintf(`{"path":"/src/f%d.go"}`, i))
	call.ToolName, call.ToolCallID = "fs:read_file", callID
	msgs = append(msgs,
		text(fmt.Sprintf("u%d", i), noa.RoleUser, noa.CTText, fmt.Sprintf("Step %d: read the next file and tell me what it holds.", i)),
		text(fmt.Sprintf("a%d.think", i), noa.RoleAssistant, noa.CTReasoning, "I should read the file first. "+words(rng, 40)),
		call, result,
		text(fmt.Sprintf("a%d.text", i), noa.RoleAssistant, noa.CTText, fmt.Sprintf("File %d holds FACT-%d and ", i, i)+words(rng, 60)),
	)
	g.history = append(g.history, msgs...)
	var fresh []Message
	for _, m := range g.history {
		if !h.Has(m.ID) {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) != len(msgs) {
		t.Fatalf("request %d: %d of the conversation's %d messages are new to the host, want the %d this request added", i, len(fresh), len(g.history), len(msgs))
	}
	turn, err := h.Turn(ctx, fresh...)
	if err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	g.record(h, i, turn, "", "")
	if turn.Nudge != "" {
		// The model follows the nudge; the gateway applies the call and
		// sends the continuation upstream: a turn with nothing new.
		panel, err := h.Compress(ctx, compressArgs(rangesOf(turn.Nudge)))
		if err != nil {
			t.Fatalf("request %d: Compress: %v", i, err)
		}
		next, err := h.Turn(ctx)
		if err != nil {
			t.Fatalf("request %d: continuation: %v", i, err)
		}
		g.record(h, i, next, panel.Text, "")
	}
	if i%6 == 5 {
		// The model asks for an early fact back; the gateway answers from
		// the archive and records the call and its page.
		raID := fmt.Sprintf("toolu_ra%02d", i)
		ra := text(fmt.Sprintf("a%d.ra", i), noa.RoleAssistant, noa.CTToolCall, `{"ref":"m00005"}`)
		ra.ToolName, ra.ToolCallID = ReadArchiveToolName, raID
		page, err := h.ReadArchive(ctx, ReadArchiveArgs{Ref: "m00005"})
		if err != nil {
			t.Fatalf("request %d: read_archive: %v", i, err)
		}
		res := text(fmt.Sprintf("t%d.ra", i), noa.RoleTool, noa.CTToolResult, page.Text+"\n"+page.Note)
		res.ToolName, res.ToolCallID = ReadArchiveToolName, raID
		next, err := h.Turn(ctx, ra, res)
		if err != nil {
			t.Fatalf("request %d: read_archive turn: %v", i, err)
		}
		g.record(h, i, next, "", page.Text)
	}
}

func (g *gatewayConversation) record(h *Host, i int, turn Turn, panel, page string) {
	refs := map[string]MessageRef{}
	for _, m := range turn.View {
		if ref, ok := h.Ref(m.ID); ok {
			refs[m.ID] = ref
		}
	}
	g.steps = append(g.steps, gatewayStep{Request: i, View: turn.View, Nudge: turn.Nudge, Refs: refs, Recorded: turn.Recorded,
		Panel: panel, Page: page, Total: turn.Total, Projected: turn.Projected})
}

// A gateway conversation: messages of every role with the gateway's ids,
// turns, nudges followed by Compress, an oversize tool result cut, a
// read_archive answered and recorded. The same conversation on a host that
// is closed and reopened from disk (and once killed) at points along the
// way produces identical views, nudges, refs, panels and pages at every
// step, and ends in the identical state.
func TestGatewayConversationSurvivesRestarts(t *testing.T) {
	const requests = 24
	optsA, optsB := testOptions(t), testOptions(t)
	a := &gatewayConversation{t: t}
	ha := openHost(t, optsA, "conv")
	for i := range requests {
		a.request(ha, i)
	}

	b := &gatewayConversation{t: t}
	hb := openHost(t, optsB, "conv")
	for i := range requests {
		switch i {
		case 5, 13:
			if err := hb.Close(); err != nil {
				t.Fatal(err)
			}
			hb = openHost(t, optsB, "conv")
			if r := hb.Report(); r.StateMismatch || r.StateMissing || r.TornTail || len(r.Warnings) > 0 {
				t.Errorf("reopening before request %d reported %+v, want a clean session", i, r)
			}
		case 19:
			crash(t, hb)
			hb = openHost(t, optsB, "conv")
			if r := hb.Report(); r.StateMismatch || r.TornTail {
				t.Errorf("reopening after a crash before request %d reported %+v, want state.json at most behind", i, r)
			}
		}
		b.request(hb, i)
	}
	if diff := cmp.Diff(a.steps, b.steps); diff != "" {
		t.Errorf("the reopened host answered differently (-continuous +reopened):\n%s", diff)
	}
	// The two sessions live in different directories, which the state
	// names (its archive root and paths); apart from that they are equal.
	if a, b := stateIn(t, ha.State(), optsA.Dir), stateIn(t, hb.State(), optsB.Dir); a != b {
		t.Errorf("final states differ: %s", stateDiff(ha.State(), hb.State()))
	}
	if diff := cmp.Diff(ha.Messages(), hb.Messages()); diff != "" {
		t.Errorf("final streams differ (-continuous +reopened):\n%s", diff)
	}

	// What the conversation must have exercised, so the comparison means
	// something.
	var nudges, compressed, cut, pages int
	roles := map[string]bool{}
	for _, m := range ha.Messages() {
		roles[string(m.Role)+"/"+string(m.ContentType)] = true
	}
	for _, s := range a.steps {
		if s.Nudge != "" {
			nudges++
		}
		if strings.Contains(s.Panel, "block(s) created") {
			compressed++
			summaries := 0
			for _, m := range s.View {
				if strings.HasPrefix(m.ID, noa.SummaryIDPrefix) {
					summaries++
				}
			}
			if summaries == 0 || s.Projected >= s.Total {
				t.Errorf("request %d: after Compress the view holds %d summaries and %d of %d tokens; want summaries and a smaller view", s.Request, summaries, s.Projected, s.Total)
			}
		}
		for _, m := range s.Recorded {
			if m.Original != "" {
				cut++
				if !strings.Contains(m.Text, noa.TruncationMarker) {
					t.Errorf("request %d: %s was cut without noa's marker", s.Request, m.ID)
				}
			}
		}
		if s.Page != "" {
			pages++
			if !strings.HasPrefix(s.Page, "FACT-0: ") {
				t.Errorf("request %d: read_archive m00005 returned %.40q, want the first tool result verbatim", s.Request, s.Page)
			}
		}
	}
	for _, want := range []string{"system/text", "user/text", "assistant/reasoning", "assistant/text", "assistant/tool-call", "tool/tool-result"} {
		if !roles[want] {
			t.Errorf("the stream holds no %s message", want)
		}
	}
	if nudges == 0 || compressed == 0 || cut == 0 || pages == 0 {
		t.Errorf("got %d nudges, %d compressions, %d cut results, %d pages; want each at least once", nudges, compressed, cut, pages)
	}
	// The gateway's ids are kept as given, and refs follow the stream:
	// sys, u0, a0.think, a0.call, then t0.
	if ref, ok := ha.Ref("t0"); !ok || ref.Ref != "m00005" {
		t.Errorf("the first tool result t0: got ref %+v, %v; want m00005", ref, ok)
	}
}

// stateIn is st as JSON with the sessions directory dir written as <dir>.
func stateIn(t *testing.T, st noa.CompressionState, dir string) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), dir, "<dir>")
}

// A turn with nothing new and nothing moved records nothing; the view is
// the same.
func TestTurnWithNothingNew(t *testing.T) {
	h := openHost(t, testOptions(t), "conv")
	first, err := h.Turn(context.Background(), text("u1", noa.RoleUser, noa.CTText, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	records := h.seq
	again, err := h.Turn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.seq != records {
		t.Errorf("a turn with nothing new wrote %d record(s), want none", h.seq-records)
	}
	if diff := cmp.Diff(first.View, again.View); diff != "" || again.Nudge != "" || len(again.Recorded) != 0 {
		t.Errorf("the second turn differs (-first +again):\n%s", diff)
	}
}

// TestOnlyOwnRefusesOtherSessions opens, as the gateway does
// (HostOptions.OnlyOwn), an MCP client's session: it is refused and left
// as it was, while a new session and one the gateway made open.
func TestOnlyOwnRefusesOtherSessions(t *testing.T) {
	opts := testOptions(t)
	h := openHost(t, opts, "mcp-client")
	call(t, h, "fs:read", "the client's secret result")
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(opts.Dir, "mcp-client", TranscriptFile)
	before, err := os.ReadFile(tr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := noa.DefaultConfig(8000)
	own := HostOptions{Noa: &cfg, OnlyOwn: true}
	if h, err := OpenWith(opts, "mcp-client", own); !errors.Is(err, ErrNotOwned) {
		if h != nil {
			h.Close()
		}
		t.Fatalf("opening an MCP session for the gateway: got %v, want ErrNotOwned", err)
	}
	if after, _ := os.ReadFile(tr); !bytes.Equal(after, before) {
		t.Error("the refused session's transcript changed")
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, "mcp-client", HostConfigFile)); !notExist(err) {
		t.Errorf("the refused session got a %s (%v)", HostConfigFile, err)
	}

	// The gateway's own: new, then reopened with its messages.
	g, err := OpenWith(opts, "gw-own", own)
	if err != nil {
		t.Fatal(err)
	}
	call(t, g, "fs:read", "the conversation's result")
	n := len(g.Messages())
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	g, err = OpenWith(opts, "gw-own", own)
	if err != nil {
		t.Fatalf("reopening the gateway's own session: %v", err)
	}
	defer g.Close()
	if got := len(g.Messages()); got != n {
		t.Errorf("reopened with %d messages, want %d", got, n)
	}
}
