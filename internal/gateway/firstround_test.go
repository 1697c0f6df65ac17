package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcproxy/mcproxy/internal/config"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
	"github.com/mcproxy/mcproxy/internal/tokens"
)

// TestSummaryRoundBodyKeepsTheClientsPrefix checks that the first round
// sends the client's messages byte for byte up to the last one, so the
// provider reads them from its cache, and adds its instruction after them,
// unstreamed; a request that cannot take it is refused.
func TestSummaryRoundBodyKeepsTheClientsPrefix(t *testing.T) {
	t.Parallel()
	const instr = "[mcproxy] summarise"
	cases := []struct {
		name, body string
		openai     bool
		ok         bool
	}{
		{"anthropic tool result", `{"model":"m","max_tokens":100,"stream":true,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"bash","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"fix the bug"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"cmd":"ls"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.py","cache_control":{"type":"ephemeral"}}]}]}`, false, true},
		{"anthropic string content", `{"model":"m","messages":[{"role":"user","content":"hello there"}]}`, false, true},
		{"anthropic prefill", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}]}`, false, false},
		{"anthropic forced tool", `{"model":"m","tool_choice":{"type":"any"},"messages":[{"role":"user","content":"hi"}]}`, false, false},
		{"openai tool message", `{"model":"gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"sys"},` +
			`{"role":"user","content":"fix it"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"a.py"}]}`, true, true},
		{"openai required", `{"model":"gpt","tool_choice":"required","messages":[{"role":"user","content":"hi"}]}`, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parse := parseAnthropic
			if tc.openai {
				parse = parseOpenAI
			}
			q, err := parse(context.Background(), []byte(tc.body), 512)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := summaryRoundBody(q, instr)
			if ok != tc.ok {
				t.Fatalf("ok: got %v, want %v (body %s)", ok, tc.ok, got)
			}
			if !ok {
				return
			}
			var in, out struct {
				Stream        *bool             `json:"stream"`
				StreamOptions json.RawMessage   `json:"stream_options"`
				Messages      []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal([]byte(tc.body), &in); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &out); err != nil {
				t.Fatalf("the round's body is not JSON: %v\n%s", err, got)
			}
			keep := len(in.Messages) - 1
			if tc.openai {
				keep++ // the instruction is a message of its own
			}
			for i := 0; i < keep; i++ {
				if !bytes.Equal(in.Messages[i], out.Messages[i]) {
					t.Errorf("message %d: got %s, want the client's %s", i, out.Messages[i], in.Messages[i])
				}
			}
			last := string(out.Messages[len(out.Messages)-1])
			if !strings.Contains(last, instr) {
				t.Errorf("last message: got %s, want the instruction in it", last)
			}
			if !tc.openai && !strings.Contains(last, `"cache_control"`) && strings.Contains(tc.body, `"content":"a.py","cache_control"`) {
				t.Errorf("last message: got %s, want the client's cache_control kept", last)
			}
			if in.Stream != nil && (out.Stream == nil || *out.Stream) {
				t.Errorf("stream: got %v, want false", out.Stream)
			}
			if len(out.StreamOptions) > 0 {
				t.Errorf("stream_options: got %s, want none on an unstreamed round", out.StreamOptions)
			}
		})
	}
}

func TestSummaryRoundReply(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("kept fact ", 10)
	cases := []struct {
		name, body string
		openai     bool
		want       string // "" means an error
	}{
		{"anthropic", `{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Here: <summary> ` + long + ` </summary>"}]}`, false, strings.TrimSpace(long)},
		{"anthropic tool call", `{"content":[{"type":"text","text":"<summary>` + long + `</summary>"},{"type":"tool_use","id":"x","name":"bash","input":{}}]}`, false, ""},
		{"anthropic no tags", `{"content":[{"type":"text","text":"` + long + `"}]}`, false, ""},
		{"anthropic too short", `{"content":[{"type":"text","text":"<summary>short</summary>"}]}`, false, ""},
		{"anthropic unclosed", `{"content":[{"type":"text","text":"<summary>` + long + `"}]}`, false, strings.TrimSpace(long)},
		{"openai", `{"choices":[{"message":{"role":"assistant","content":"<summary>` + long + `</summary>"}}]}`, true, strings.TrimSpace(long)},
		{"openai tool call", `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}}]}`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := anthropicAPI
			if tc.openai {
				p = openaiAPI
			}
			got, err := summaryRoundReply(p, []byte(tc.body), 50)
			if tc.want == "" {
				if err == nil {
					t.Errorf("got summary %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestSummaryInstructionIsShort bounds the first round's instruction: it
// carries its rules itself (noa's system text is not in that request), and
// must still cost little (issue 27: a nudge of at most about 400 tokens).
func TestSummaryInstructionIsShort(t *testing.T) {
	t.Parallel()
	tk, err := tokens.New("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 500)
	s := summaryInstruction(123456, 200000, describe(noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "bash", Text: long}),
		describe(noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, Text: "ran the tests\nmore"}), 20000)
	if n := tk.Count(s); n > 400 {
		t.Errorf("instruction: got %d tokens, want at most 400:\n%s", n, s)
	}
	if !strings.Contains(s, `"ran the tests"`) || strings.Contains(s, "more") {
		t.Errorf("instruction: got %q, want the end named by its first line only", s)
	}
}

// summarising is a model that obeys the first round's instruction with a
// summary naming what the conversation read, and otherwise answers "ok".
func summarising(req *scriptedmodel.Request) scriptedmodel.Reply {
	var body struct {
		Messages []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(req.Body, &body)
	last := ""
	if n := len(body.Messages); n > 0 {
		for _, c := range body.Messages[n-1].Content {
			last += c.Text
		}
	}
	if strings.Contains(last, "[mcproxy]") && strings.Contains(last, summaryOpen) {
		return scriptedmodel.Say(summaryOpen + "Read files f0, f1 and g0 to g7 for the user; each holds only repeated lines naming its file. Nothing else was found." + summaryClose)
	}
	return scriptedmodel.Say("ok")
}

// TestFirstRoundReadsTheCache: the request that engages a conversation
// first asks for a summary in the client's own request (its messages
// byte for byte, noa's tools absent, so the provider reads the client's
// prefix from its cache), applies it, and forwards the engaged
// conversation with the summary in place of what it covers; the client
// gets the model's answer.
func TestFirstRoundReadsTheCache(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, summarising, withHosts(&MemoryHosts{}), compressAt(0.5))
			small := conversation(2, 200, "What was in file 1?")
			large := reads(small, 0, 8, 2400, "What was in g7?")
			var answer string
			for _, msgs := range [][]any{small, large} {
				body := anthropicBody(msgs)
				body["stream"] = stream
				resp, a := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, body)), map[string]string{"x-api-key": "k"})
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("got %d %s", resp.StatusCode, a)
				}
				answer = string(a)
			}
			if !strings.Contains(answer, "ok") || strings.Contains(answer, summaryOpen) {
				t.Errorf("the client's answer: got %s, want the model's answer and nothing of the summary round", answer)
			}
			reqs := r.up.Requests()
			if len(reqs) != 3 {
				t.Fatalf("upstream got %d requests, want 3 (the small conversation, the summary round, the engaged request)", len(reqs))
			}
			round, engaged := reqs[1].Body, reqs[2].Body
			var client, sent struct {
				Messages []json.RawMessage `json:"messages"`
			}
			if err := json.Unmarshal(indented(t, anthropicBody(large)), &client); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(round, &sent); err != nil {
				t.Fatal(err)
			}
			if len(sent.Messages) != len(client.Messages) {
				t.Fatalf("summary round: got %d messages, want the client's %d", len(sent.Messages), len(client.Messages))
			}
			for i := range len(client.Messages) - 1 {
				if !bytes.Equal(sent.Messages[i], client.Messages[i]) {
					t.Fatalf("summary round message %d: got %s, want the client's bytes %s", i, sent.Messages[i], client.Messages[i])
				}
			}
			if hasTool(round, noa.CompressToolName) || len(refs(round)) > 0 {
				t.Errorf("the summary round carries noa's tools or ref tags, which would rewrite the provider's cache:\n%s", round)
			}
			if !engagedBody(engaged) || !bytes.Contains(engaged, []byte("Nothing else was found.")) {
				t.Errorf("the engaged request lacks noa's additions or the summary:\n%s", engaged)
			}
			// The summary was written without refs in view; the index the
			// gateway adds points into the archive.
			if !regexp.MustCompile(`\\nm000\d\d: read_file \{\\"path\\":\\"/g0\\"\}`).Match(engaged) {
				t.Errorf("the engaged request's summary lacks the archive index naming g0's read by ref:\n%s", engaged)
			}
			if bytes.Contains(engaged, []byte("text of file g0.")) {
				t.Errorf("the engaged request still carries what the summary covers:\n%s", engaged)
			}
		})
	}
}

// TestFirstRoundDeclined: a model that answers the summary round with
// anything but a summary loses nothing: the conversation engages the usual
// way, noa's tools offered with its nudge, and the client gets the model's
// answer to its own request.
func TestFirstRoundDeclined(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }, withHosts(&MemoryHosts{}), compressAt(0.5))
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 8, 2400, "What was in g7?")
	for _, msgs := range [][]any{small, large} {
		if resp, a := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, anthropicBody(msgs))), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK || !bytes.Contains(a, []byte("ok")) {
			t.Fatalf("got %d %s, want 200 and the model's answer", resp.StatusCode, a)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3 (the small conversation, the declined round, the engaged request)", len(reqs))
	}
	if last := reqs[2].Body; !engagedBody(last) || !bytes.Contains(last, []byte("[noa]")) {
		t.Errorf("after a declined summary round: got %s, want noa's tools and its nudge", last)
	}
}

// TestFirstRoundAtTokenCountOfALargeWindow: in the sessions mcproxy serve
// uses, a conversation of a 1M window that reaches compress_at_tokens gets
// its first round at once: noa's nudge floor follows the engaging point
// (SessionHosts.EngageAt), not its own share of the window, so the
// engaging turn has a span to summarise.
func TestFirstRoundAtTokenCountOfALargeWindow(t *testing.T) {
	t.Parallel()
	hosts := sessionHosts(t, t.TempDir())
	r := newRig(t, summarising, withAnyHosts(hosts), func(o *Options) {
		o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: 1_000_000}}
		o.Config.CompressAt = 0.5
		o.Config.CompressAtTokens = 30000
		hosts.EngageAt = o.Config.EngageAt
	})
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 64, 2400, "What was in g7?") // about 40K tokens
	for _, msgs := range [][]any{small, large} {
		if resp, a := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, anthropicBody(msgs))), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, a)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3: the small conversation, the summary round, the engaged request", len(reqs))
	}
	if engagedBody(reqs[1].Body) || !bytes.Contains(reqs[1].Body, []byte("[mcproxy]")) {
		t.Fatalf("the second request is not the summary round:\n%.3000s", reqs[1].Body[max(0, len(reqs[1].Body)-3000):])
	}
	if !engagedBody(reqs[2].Body) || !bytes.Contains(reqs[2].Body, []byte("[Compressed conversation section]")) {
		t.Errorf("the engaged request lacks noa's additions or the summary:\n%s", reqs[2].Body)
	}
}

// TestArchiveIndexNamesWhatEachResultTaught: an index line carries the
// rarest code names of its result first, not those of the call that
// asked for it, so a model looking for a name knows
// which ref to read back.
func TestArchiveIndexNamesWhatEachResultTaught(t *testing.T) {
	t.Parallel()
	call := func(id, args string) noa.CoreMessage {
		return noa.CoreMessage{ID: "c" + id, Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "bash", ToolCallID: id, Text: args}
	}
	result := func(id, text string) noa.CoreMessage {
		return noa.CoreMessage{ID: "r" + id, Role: noa.RoleUser, ContentType: noa.CTToolResult, ToolCallID: id, Text: text}
	}
	view := []noa.CoreMessage{
		call("1", `{"command":"cat src/app/models.py"}`),
		result("1", "from app.common_base import Base\nclass Order(Base):\n    def total_price(self): return self.line_items.sum()\n# see src/app/models.py"),
		call("2", `{"command":"cat src/app/views.py"}`),
		result("2", "from app.common_base import Base\ndef render_invoice(order): return order.total_price()"),
	}
	refs := map[string]Ref{"c1": {"m00001", 10}, "r1": {"m00002", 40}, "c2": {"m00003", 10}, "r2": {"m00004", 30}}
	index := archiveIndex(view, refs, "m00001", "m00004")
	lines := strings.Split(index, "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a heading and one line per result:\n%s", len(lines), index)
	}
	first, second := lines[1], lines[2]
	if !strings.HasPrefix(first, "m00002: bash ") || !strings.Contains(first, "self.line_items.sum") || !strings.Contains(first, "total_price") {
		t.Errorf("the first result's line lacks its ref or the names it taught: %q", first)
	}
	if strings.Contains(first[strings.Index(first, " · "):], "src/app/models.py") {
		t.Errorf("the first result's names repeat its call's path: %q", first)
	}
	if i, j := strings.Index(second, "render_invoice"), strings.Index(second, "app.common_base"); i < 0 || j >= 0 && j < i {
		t.Errorf("the second result's line: got %q, want render_invoice, ahead of app.common_base, which both results hold", second)
	}
}

// TestFirstRoundClipsALongSummary: a first-round summary longer than noa's
// summary limit (the model wrote more than it was asked for) is cut at a
// line with a note and applied, rather than refused by Compress, which
// would send the turn to the nudge round that rewrites the whole cache.
func TestFirstRoundClipsALongSummary(t *testing.T) {
	t.Parallel()
	long := func(req *scriptedmodel.Request) scriptedmodel.Reply {
		if r := summarising(req); len(r.Parts) == 1 && strings.Contains(r.Parts[0].Text, summaryOpen) {
			return scriptedmodel.Say(summaryOpen + strings.Repeat("Read a file and noted what it holds.\n", 800) + summaryClose)
		}
		return scriptedmodel.Say("ok")
	}
	r := newRig(t, long, withHosts(&MemoryHosts{}), compressAt(0.5))
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 8, 2400, "What was in g7?")
	for _, msgs := range [][]any{small, large} {
		if resp, a := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, anthropicBody(msgs))), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, a)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3 (the small conversation, the summary round, the engaged request)", len(reqs))
	}
	engaged := reqs[2].Body
	if !bytes.Contains(engaged, []byte("[Compressed conversation section]")) || !bytes.Contains(engaged, []byte("the summary was cut here")) {
		t.Errorf("the engaged request lacks the cut summary (a refused summary leaves the nudge round):\n%.2000s", engaged)
	}
}

func TestWithIndexFitsTheLimit(t *testing.T) {
	t.Parallel()
	index := "Tool results archived in this block, by ref:\n" + strings.Repeat("m00012: bash cat a_file.py · some_name\n", 100)
	for _, summary := range []string{"short", strings.Repeat("a line of summary\n", 2000)} {
		got := withIndex(summary, strings.TrimSuffix(index, "\n"), 3000)
		if n := utf8.RuneCountInString(got); n > 3000 {
			t.Errorf("summary of %d: got %d characters, want at most 3000", len(summary), n)
		}
		if !strings.Contains(got, "m00012: bash") || !strings.HasPrefix(got, summary[:min(len(summary), 100)]) {
			t.Errorf("summary of %d: lost the summary's start or the whole index:\n%.300s", len(summary), got)
		}
	}
	if got := withIndex("s", "i", 0); got != "s\n\ni" {
		t.Errorf("no limit: got %q", got)
	}
}

// TestFirstRoundTakesEveryRange: when what is compressible comes in
// several ranges (here split by the latest user message, which noa
// protects, with the agent's reads going on after it), the first round
// summarises from the first to the last in one go: the reads of both
// stay out of view, the user's message stays in it, and the index covers
// both.
func TestFirstRoundTakesEveryRange(t *testing.T) {
	t.Parallel()
	r := newRig(t, summarising, withHosts(&MemoryHosts{}), compressAt(0.5))
	small := conversation(2, 200, "What was in file 1?")
	large := reads(small, 0, 4, 1600, "Also read g4 to g11, please.")
	for i := 4; i < 12; i++ {
		id := fmt.Sprintf("toolu_g%02d", i)
		large = append(large,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/g%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": fmt.Sprintf("file g%d: ", i) + strings.Repeat(fmt.Sprintf("text of file g%d. ", i), 1600/17)}}})
	}
	for _, msgs := range [][]any{small, large} {
		if resp, a := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(indented(t, anthropicBody(msgs))), map[string]string{"x-api-key": "k"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("got %d %s", resp.StatusCode, a)
		}
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 || !bytes.Contains(reqs[1].Body, []byte("[mcproxy]")) {
		t.Fatalf("upstream got %d requests, want 3: the small conversation, the summary round, the engaged request", len(reqs))
	}
	engaged := reqs[2].Body
	if !engagedBody(engaged) || !bytes.Contains(engaged, []byte("Nothing else was found.")) {
		t.Fatalf("the engaged request lacks the summary:\n%s", engaged)
	}
	for _, gone := range []string{"text of file g0.", "text of file g4."} {
		if bytes.Contains(engaged, []byte(gone)) {
			t.Errorf("the engaged request still carries %q: a range was left out of the first compression", gone)
		}
	}
	if !bytes.Contains(engaged, []byte("Also read g4 to g11, please.")) {
		t.Errorf("the latest user message is gone from view; noa protects it")
	}
	for _, g := range []string{"g0", "g4"} {
		if !regexp.MustCompile(`\\nm000\d\d: read_file \{\\"path\\":\\"/` + g + `\\"\}`).Match(engaged) {
			t.Errorf("the summary's index does not name the read of %s", g)
		}
	}
}
