package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// testModel has a small window, so a test conversation fills it.
const testModel = "test-model"

// engageAtOnce is a compress_at that engages noa on a conversation's first
// request: the tests that use it check what an engaged conversation's
// requests carry (engage_test.go checks when one engages).
const engageAtOnce = 0.001

func withHosts(h *MemoryHosts) rigOption {
	return func(o *Options) {
		o.Hosts = h
		o.Config.Models = map[string]config.GatewayModel{testModel: {ContextWindow: 8000}}
		o.Config.CompressAt = engageAtOnce
	}
}

var refTag = regexp.MustCompile(`\[(m\d{5}) · [^\]]+ tok\]`)

// refs lists the ref tags in a forwarded request's messages, in order.
func refs(body []byte) []string {
	var b struct {
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &b)
	var out []string
	for _, m := range refTag.FindAllSubmatch(b.Messages, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// hasTool reports whether a forwarded request offers the named tool.
func hasTool(body []byte, name string) bool {
	var b struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &b)
	for _, t := range b.Tools {
		if t.Name == name || t.Function.Name == name {
			return true
		}
	}
	return false
}

// conversation is a tool-heavy Anthropic conversation of n reads, each
// result size bytes, ending with a user question.
func conversation(n, size int, question string) []any {
	msgs := []any{map[string]any{"role": "user", "content": "Read the files and tell me about them."}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("toolu_r%02d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": fmt.Sprintf("/f%d", i)}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id,
				"content": fmt.Sprintf("file %d: ", i) + strings.Repeat(fmt.Sprintf("line of file %d. ", i), size/16)}}})
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "I have read them."},
		map[string]any{"role": "user", "content": question})
	return msgs
}

func anthropicBody(msgs []any) map[string]any {
	return map[string]any{"model": testModel, "max_tokens": 256, "system": "You are terse.", "messages": msgs,
		"tools":    []any{map[string]any{"name": "read_file", "input_schema": map[string]any{"type": "object"}}},
		"metadata": map[string]any{"user_id": "u-1"}, "x_future_field": map[string]any{"kept": true}}
}

func TestProjectionAddsNoaAndKeepsTheRest(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("answer") }, withHosts(hosts))
	body := anthropicBody(conversation(2, 200, "What was in file 1?"))
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: body})
	if !o.OK || !strings.Contains(string(o.Result), `"answer"`) {
		t.Fatalf("SDK: %s %s", o.Message, o.Result)
	}
	up := r.up.Requests()[0]
	var got map[string]json.RawMessage
	if err := json.Unmarshal(up.Body, &got); err != nil {
		t.Fatal(err)
	}
	if !hasTool(up.Body, noa.CompressToolName) || !hasTool(up.Body, ReadArchiveTool) || !hasTool(up.Body, "read_file") {
		t.Errorf("forwarded tools %s, want the client's plus Compress and read_archive", got["tools"])
	}
	if !bytes.Contains(got["system"], []byte("You are terse.")) || !bytes.Contains(got["system"], []byte(noa.SystemPromptHeader)) {
		t.Errorf("forwarded system %s, want the client's prompt then noa's", got["system"])
	}
	for _, k := range []string{"metadata", "x_future_field", "max_tokens", "model"} {
		want, _ := json.Marshal(body[k])
		if !bytes.Equal(canonical(got[k]), canonical(want)) {
			t.Errorf("%s: forwarded %s, want %s", k, got[k], want)
		}
	}
	if tags := refs(up.Body); len(tags) != 4 || tags[0] != "m00001" {
		t.Errorf("got ref tags %v, want one per user-side part, from m00001", tags)
	}
}

// compressingModel answers the first request it sees with a tool list
// holding Compress by compressing everything from the second ref (the
// first is the task, which is never compressed) to the third-to-last;
// every other request gets a text answer.
type compressingModel struct {
	mu       sync.Mutex
	done     bool
	withTool string // a client tool call to make beside Compress ("" none)
	// plain: the Compress answer has no thinking block, so the gateway
	// renders its call as it will in later requests.
	plain bool
}

func (m *compressingModel) script(r *scriptedmodel.Request) scriptedmodel.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Path == "/v1/messages/count_tokens" {
		return scriptedmodel.Reply{} // counted by the server's estimate
	}
	tags := refs(r.Body)
	if m.done || !hasTool(r.Body, noa.CompressToolName) || len(tags) < 4 {
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("final answer")}, Usage: scriptedmodel.Usage{InputTokens: 100, OutputTokens: 10}}
	}
	m.done = true
	args := fmt.Sprintf(`{"content":[{"start":%q,"end":%q,"topic":"file reads","summary":"Read files 0 to %d; each holds repeated lines naming its number. Nothing else of note."}]}`,
		tags[1], tags[len(tags)-3], len(tags))
	parts := []scriptedmodel.Part{scriptedmodel.Thinking("I should compress first.", "sig-c"), scriptedmodel.ToolCall("toolu_c1", noa.CompressToolName, args)}
	if m.plain {
		parts = parts[1:]
	}
	if m.withTool != "" {
		parts = append(parts, scriptedmodel.ToolCall("toolu_client", m.withTool, `{"path":"/next"}`))
	}
	return scriptedmodel.Reply{Parts: parts, Usage: scriptedmodel.Usage{InputTokens: 1000, OutputTokens: 50, CacheRead: 7}}
}

func TestHiddenCompressRound(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	model := &compressingModel{}
	r := newRig(t, model.script, withHosts(hosts))
	msgs := conversation(8, 1200, "What was in file 7?")
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: anthropicBody(msgs)})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	var m struct {
		Content []struct{ Type, Text, Name string }
		Usage   struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			CacheRead    int `json:"cache_read_input_tokens"`
		}
	}
	if err := json.Unmarshal(o.Result, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || m.Content[0].Text != "final answer" {
		t.Errorf("client got %s, want only the final answer", o.Result)
	}
	if m.Usage.InputTokens != 1100 || m.Usage.OutputTokens != 60 || m.Usage.CacheRead != 7 {
		t.Errorf("client got usage %+v, want the sum of both rounds (1100 in, 60 out, 7 cache read)", m.Usage)
	}
	reqs := r.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2 (one hidden round)", len(reqs))
	}
	cont := string(reqs[1].Body)
	for _, want := range []string{`"thinking":"I should compress first."`, `"signature":"sig-c"`, `"tool_use_id":"toolu_c1"`, "[Compressed conversation section]"} {
		if !strings.Contains(cont, want) {
			t.Errorf("continuation lacks %s", want)
		}
	}
	if len(reqs[1].Body) >= len(reqs[0].Body) {
		t.Errorf("continuation is %d bytes, want fewer than the first request's %d", len(reqs[1].Body), len(reqs[0].Body))
	}

	// The client's next request (its history plus the answer and a new
	// question) continues the conversation: compressed, and nothing
	// recorded twice.
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": "And file 3?"})
	o = gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: anthropicBody(next)})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	reqs = r.up.Requests()
	third := reqs[2].Body
	if !bytes.Contains(third, []byte("[Compressed conversation section]")) || bytes.Contains(third, []byte("line of file 2. line of file 2.")) {
		t.Errorf("the next request was not projected through the compression")
	}
	if len(hosts.hosts) != 1 {
		t.Errorf("got %d conversations, want 1", len(hosts.hosts))
	}
	for _, h := range hosts.hosts {
		seen := map[string]bool{}
		for _, msg := range h.Messages() {
			if seen[msg.ID] {
				t.Errorf("message %s recorded twice", msg.ID)
			}
			seen[msg.ID] = true
		}
		if got, want := len(h.Messages()), 1+2*8+2+2+2; got != want {
			t.Errorf("host holds %d messages, want %d (client parts plus the Compress call and result)", got, want)
		}
	}
}

func TestMixedCompressAndClientTool(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	model := &compressingModel{withTool: "read_file"}
	r := newRig(t, model.script, withHosts(hosts))
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create",
		Body: anthropicBody(conversation(8, 1200, "Next file?"))})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	res := string(o.Result)
	if strings.Contains(res, noa.CompressToolName) || !strings.Contains(res, `"toolu_client"`) || !strings.Contains(res, `"stop_reason":"tool_use"`) {
		t.Errorf("client got %s, want its own tool call only", res)
	}
	if n := len(r.up.Requests()); n != 1 {
		t.Errorf("upstream got %d requests, want 1: the client's tool call goes back at once", n)
	}
	for _, h := range hosts.hosts {
		if st := h.st; len(noa.ActiveBlocks(st)) != 1 {
			t.Errorf("got %d blocks, want the Compress executed", len(noa.ActiveBlocks(st)))
		}
	}
}

func TestHiddenRoundsBounded(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	calls := 0
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		if bytes.Contains(req.Body, []byte(`"tool_choice":{"type":"none"}`)) {
			return scriptedmodel.Say("forced answer")
		}
		calls++
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall(fmt.Sprintf("toolu_%d", calls), noa.CompressToolName, `{"content":[]}`)}}
	}, withHosts(hosts), func(o *Options) { o.Config.MaxHiddenRounds = 2 })
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create",
		Body: anthropicBody(conversation(1, 100, "hi"))})
	if !o.OK || !strings.Contains(string(o.Result), "forced answer") {
		t.Fatalf("SDK: %s %s", o.Message, o.Result)
	}
	if n := len(r.up.Requests()); n != 3 {
		t.Errorf("upstream got %d requests, want 3 (two hidden rounds, then one without tools)", n)
	}
}

func TestProjectionFaults(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		if req.Model == "overloaded" {
			return scriptedmodel.Reply{Status: 529}
		}
		return scriptedmodel.Say("ok")
	}, withHosts(hosts))
	// A malformed request reaches the provider as it came.
	resp, _ := r.do(t, context.Background(), http.MethodPost, "/v1/messages", `{"model":"m","messages":"not a list"}`, nil)
	if resp.StatusCode != 200 || string(r.up.Requests()[0].Body) != `{"model":"m","messages":"not a list"}` {
		t.Errorf("malformed request: got %d, forwarded %s", resp.StatusCode, r.up.Requests()[0].Body)
	}
	// Upstream errors pass through unchanged.
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", `{"model":"overloaded","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, nil)
	if resp.StatusCode != 529 || !bytes.Contains(b, []byte("overloaded_error")) {
		t.Errorf("got %d %s, want the provider's 529", resp.StatusCode, b)
	}
	// An invalid session header gets a provider-style 400.
	resp, b = r.do(t, context.Background(), http.MethodPost, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, map[string]string{HeaderSession: "../etc"})
	if resp.StatusCode != 400 || !bytes.Contains(b, []byte("invalid_request_error")) || !bytes.Contains(b, []byte(HeaderSession)) {
		t.Errorf("got %d %s, want a 400 naming the header", resp.StatusCode, b)
	}
}

func TestForkStartsNewConversation(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }, withHosts(hosts))
	send := func(msgs []any, header map[string]string) {
		b, _ := json.Marshal(anthropicBody(msgs))
		resp, body := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), header)
		if resp.StatusCode != 200 {
			t.Fatalf("got %d %s", resp.StatusCode, body)
		}
	}
	base := conversation(1, 50, "q1")
	send(base, nil)
	send(append(append([]any(nil), base...), map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "q2"}), nil)
	if len(hosts.hosts) != 1 {
		t.Fatalf("an extension made %d conversations, want 1", len(hosts.hosts))
	}
	edited := append([]any(nil), base...)
	edited[len(edited)-1] = map[string]any{"role": "user", "content": "q1, edited"}
	send(edited, nil)
	if len(hosts.hosts) != 2 {
		t.Errorf("an edited history made %d conversations, want 2", len(hosts.hosts))
	}
	// A name scopes the conversation: the same history under it is another
	// conversation, whose id is still the gateway's own.
	send(base, map[string]string{HeaderSession: "explicit-1"})
	if _, ok := hosts.hosts["explicit-1"]; ok || len(hosts.hosts) != 3 {
		t.Errorf("the named request made conversations %v, want a third of the gateway's own ids", keys(hosts.hosts))
	}
	if h := r.up.Requests()[3].Header.Get(HeaderSession); h != "" {
		t.Errorf("%s reached the upstream", HeaderSession)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestProjectionOpenAI(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	hosts := &MemoryHosts{}
	var mu sync.Mutex
	compressed := false
	r := newRig(t, func(req *scriptedmodel.Request) scriptedmodel.Reply {
		mu.Lock()
		defer mu.Unlock()
		tags := refs(req.Body)
		if !compressed && hasTool(req.Body, noa.CompressToolName) && len(tags) >= 4 {
			compressed = true
			return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.ToolCall("call_c", noa.CompressToolName,
				fmt.Sprintf(`{"content":[{"start":%q,"end":%q,"summary":"The user asked for several lookups; each returned a long block of repeated text."}]}`, tags[0], tags[len(tags)-3]))},
				Usage: scriptedmodel.Usage{InputTokens: 500, OutputTokens: 20}}
		}
		return scriptedmodel.Reply{Parts: []scriptedmodel.Part{scriptedmodel.Text("done")}, Usage: scriptedmodel.Usage{InputTokens: 100, OutputTokens: 5}}
	}, withHosts(hosts))
	msgs := []any{map[string]any{"role": "system", "content": "sys"}, map[string]any{"role": "user", "content": "look things up"}}
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "lookup", "arguments": `{"i":1}`}}}},
			map[string]any{"role": "tool", "tool_call_id": id, "content": strings.Repeat("result text ", 150)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "summarize"})
	o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.OpenAI, BaseURL: r.url + "/openai/v1", APIKey: "k", Kind: "create",
		Body: map[string]any{"model": testModel, "messages": msgs}})
	if !o.OK {
		t.Fatalf("SDK: %s", o.Message)
	}
	res := string(o.Result)
	if !strings.Contains(res, `"content":"done"`) || strings.Contains(res, "Compress") || !strings.Contains(res, `"prompt_tokens":600`) {
		t.Errorf("client got %s, want the final answer with usage summed", res)
	}
	reqs := r.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(reqs))
	}
	cont := string(reqs[1].Body)
	if !strings.Contains(cont, `"tool_call_id":"call_c"`) || !strings.Contains(cont, "[Compressed conversation section]") ||
		!strings.Contains(cont, `"messages":[{"content":"sys\n\n# noa context management`) {
		t.Errorf("continuation %s lacks the compression or noa's system prompt", cont)
	}
}

func TestPacingLeavesRoomForSystemAndTools(t *testing.T) {
	hosts := &MemoryHosts{}
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }, withHosts(hosts))
	seen := map[string]bool{} // conversations of the earlier cases
	for i, tc := range []struct {
		name   string
		system int // bytes
		want   func(limit int) bool
	}{
		{"a long system prompt", 16000, func(l int) bool { return l < 8000-4000 && l > 8000-4000-600 }},
		{"a system prompt past the window", 64000, func(l int) bool { return l == 8000/4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := anthropicBody(conversation(1, 100, tc.name))
			body["system"] = strings.Repeat("s", tc.system)
			b, _ := json.Marshal(body)
			scope := fmt.Sprintf("pace-%d", i)
			if resp, out := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), map[string]string{HeaderSession: scope}); resp.StatusCode != 200 {
				t.Fatalf("got %d %s", resp.StatusCode, out)
			}
			limit := 0
			for id, h := range hosts.hosts {
				if !seen[id] {
					seen[id], limit = true, h.cfg.ModelContextLimit
				}
			}
			if !tc.want(limit) {
				t.Errorf("noa paced against %d tokens of the 8000 window", limit)
			}
		})
	}
}

func TestIndexAheadOfHostRecordsEverything(t *testing.T) {
	convs, _ := OpenConversations("", ConversationsOptions{})
	script := func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("ok") }
	first := newRig(t, script, withHosts(&MemoryHosts{}), func(o *Options) { o.Conversations = convs })
	msgs := conversation(3, 200, "q1")
	b, _ := json.Marshal(anthropicBody(msgs))
	first.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), nil)

	// A second gateway with the same index but hosts that hold nothing
	// (they lost their state): the conversation is recognised, and the host
	// gets every message, not only the new ones.
	fresh := &MemoryHosts{}
	second := newRig(t, script, withHosts(fresh), func(o *Options) { o.Conversations = convs })
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": "ok"}, map[string]any{"role": "user", "content": "q2"})
	b, _ = json.Marshal(anthropicBody(next))
	second.do(t, context.Background(), http.MethodPost, "/v1/messages", string(b), nil)
	q := mustParse(t, b)
	if len(fresh.hosts) != 1 {
		t.Fatalf("got %d conversations, want the one the index knows", len(fresh.hosts))
	}
	for _, h := range fresh.hosts {
		if got := len(h.Messages()); got != len(q.core) {
			t.Errorf("the host holds %d messages, want all %d of the request", got, len(q.core))
		}
	}
	if got := refs(second.up.Requests()[0].Body); len(got) == 0 || got[0] != "m00001" {
		t.Errorf("forwarded ref tags %v, want them from m00001", got)
	}
}
