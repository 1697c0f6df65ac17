package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// breakpoints lists the cache_control values in JSON raw, at any depth,
// in document order (decoded, so it shares nothing with the code tested).
func breakpoints(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if cc, ok := x["cache_control"]; ok {
				b, _ := json.Marshal(cc)
				out = append(out, string(b))
			}
			for _, k := range []string{"tools", "system", "messages", "content"} {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// Breakpoints as breakpoints lists them (keys sorted).
const (
	hour    = `{"ttl":"1h","type":"ephemeral"}`
	minutes = `{"type":"ephemeral"}`
)

// TestBreakpointsFollowTheProjection renders a projection whose summary
// replaced the first exchange: a client breakpoint on a replaced part
// moves to the summary, the client's others stay, the summary is marked
// when the client caches and has room, and a request never carries more
// than four.
func TestBreakpointsFollowTheProjection(t *testing.T) {
	mark := func(on bool, cc string) string {
		if !on {
			return ""
		}
		return `,"cache_control":` + cc
	}
	for _, tc := range []struct {
		name string
		// where the client put breakpoints: tools, system, the replaced
		// tool result, the kept assistant text, the last message
		tools, system, replaced, kept, last bool
		// bare: the replaced parts are left out with no summary in their
		// place (the breakpoint goes to the message before them)
		bare bool
		// want: the breakpoints of the rendered request, in order, and
		// the summary's ("" none)
		want    []string
		summary string
	}{
		{name: "moved from a replaced part", replaced: true, last: true,
			want: []string{hour, minutes}, summary: hour},
		{name: "added where the client caches", last: true,
			want: []string{minutes, minutes}, summary: minutes},
		{name: "four kept, one moved", system: true, replaced: true, kept: true, last: true,
			want: []string{hour, hour, minutes, minutes}, summary: hour},
		{name: "no room left", tools: true, system: true, kept: true, last: true,
			want: []string{hour, hour, minutes, minutes}, summary: ""},
		{name: "the client does not cache"},
		{name: "moved to the message before", replaced: true, last: true, bare: true,
			want: []string{hour, minutes}, summary: hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"model":"m",
				"tools":[{"name":"read","input_schema":{"type":"object"}` + mark(tc.tools, hour) + `}],
				"system":[{"type":"text","text":"sys"` + mark(tc.system, hour) + `}],
				"messages":[
				{"role":"user","content":"first"},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"big"` + mark(tc.replaced, hour) + `}]},
				{"role":"assistant","content":[{"type":"text","text":"a2"` + mark(tc.kept, minutes) + `}]},
				{"role":"user","content":[{"type":"text","text":"last"` + mark(tc.last, minutes) + `}]}]}`
			q, err := parseAnthropic(context.Background(), []byte(body), config.DefaultMaxJSONDepth)
			if err != nil {
				t.Fatal(err)
			}
			c := q.core
			view := []noa.CoreMessage{{ID: noa.SummaryIDPrefix + "b1", Role: noa.RoleUser, ContentType: noa.CTText, Text: "[summary] first exchange"}, c[3], c[4]}
			if tc.bare {
				view[0] = c[0] // "the summary" below is then the first message
			}
			msgs := q.render(anthropicDialect{}, projection{View: view, Nudge: "please compress"})
			top := marshal(map[string]json.RawMessage{"tools": q.top["tools"], "system": q.top["system"], "messages": joinArray(msgs)})
			got := breakpoints(t, top)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got breakpoints %v, want %v", got, tc.want)
			}
			if len(got) > maxBreakpoints {
				t.Errorf("got %d breakpoints, want at most %d", len(got), maxBreakpoints)
			}
			if s := strings.Join(breakpoints(t, msgs[0]), " "); s != tc.summary {
				t.Errorf("the summary has breakpoint %q, want %q", s, tc.summary)
			}
			if !bytes.Contains(msgs[len(msgs)-1], []byte("please compress")) || len(breakpoints(t, []byte(`{"content":[`+
				string(lastBlock(t, msgs[len(msgs)-1]))+`]}`))) != 0 {
				t.Errorf("the nudge is missing or carries a breakpoint: %s", msgs[len(msgs)-1])
			}
		})
	}
}

// lastBlock is a message's last content block.
func lastBlock(t *testing.T, msg json.RawMessage) json.RawMessage {
	t.Helper()
	var m struct {
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || len(m.Content) == 0 {
		t.Fatalf("message %s has no content blocks", msg)
	}
	return m.Content[len(m.Content)-1]
}

// TestCompressionKeepsClientBreakpoints: through the gateway, a client
// that marks its system prompt, an early tool result and its last
// message keeps all three breakpoints after the model compressed the
// early span (the tool result's now on the summary), never more than
// four, and the continuation's prefix holds for the client's next
// request.
func TestCompressionKeepsClientBreakpoints(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	model := &compressingModel{}
	r := newRig(t, model.script, withHosts(&MemoryHosts{}))
	marked := func(block map[string]any, cc string) map[string]any {
		var v any
		_ = json.Unmarshal([]byte(cc), &v)
		out := map[string]any{"cache_control": v}
		for k, e := range block {
			out[k] = e
		}
		return out
	}
	msgs := conversation(8, 1200, "What was in file 7?")
	tr := msgs[2].(map[string]any)["content"].([]any)
	tr[0] = marked(tr[0].(map[string]any), hour)
	msgs[len(msgs)-1] = map[string]any{"role": "user", "content": []any{marked(map[string]any{"type": "text", "text": "What was in file 7?"}, minutes)}}
	body := anthropicBody(msgs)
	body["system"] = []any{marked(map[string]any{"type": "text", "text": "You are terse."}, hour)}
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		map[string]any{"role": "user", "content": []any{marked(map[string]any{"type": "text", "text": "And file 3?"}, minutes)}})
	nextBody := anthropicBody(next)
	nextBody["system"] = body["system"]
	for _, b := range []map[string]any{body, nextBody} {
		if o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: b}); !o.OK {
			t.Fatalf("SDK: %s", o.Message)
		}
	}
	if !model.done {
		t.Fatal("the model did not compress; the test needs a compressed conversation")
	}
	reqs := r.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3 (Compress round, continuation, next turn)", len(reqs))
	}
	// The next turn keeps the marker on the question before it: four.
	for i, want := range [][]string{{hour, hour, minutes}, {hour, hour, minutes, minutes}} {
		q := reqs[i+1]
		if got := breakpoints(t, q.Body); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("request %d: got breakpoints %v, want the client's %v (system, the moved tool result's, its questions')", i+2, got, want)
		}
		var b struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(q.Body, &b)
		// The task stays first (noa never compresses it); the summary
		// follows it.
		if len(b.Messages) < 2 || !bytes.Contains(b.Messages[1], []byte(noa.SummaryHeader)) || fmt.Sprint(breakpoints(t, b.Messages[1])) != fmt.Sprint([]string{hour}) {
			t.Errorf("request %d: the message after the task %.300s, want the summary carrying the tool result's breakpoint", i+2, b.Messages[min(1, len(b.Messages)-1)])
		}
	}
	if !stablePrefix(t, reqs[1], reqs[2]) {
		t.Errorf("the client's next request changed the continuation's cached prefix")
	}
}

// TestHiddenRoundTailIsCached: a hidden round's request ends with the
// gateway's call and its result after the client's last breakpoint; a
// breakpoint goes on that result (added with room, moved from the client's
// latest message breakpoint without), never a fifth, and none when the
// client does not cache.
func TestHiddenRoundTailIsCached(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		tools, system, kept, last bool
		want                      []string // in order; the last is the tail's
		tail                      string   // the tail's ("" none)
	}{
		{name: "added with room", system: true, last: true, want: []string{hour, minutes, minutes}, tail: minutes},
		{name: "moved without room", tools: true, system: true, kept: true, last: true, want: []string{hour, hour, minutes, minutes}, tail: minutes},
		{name: "the client does not cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := func(on bool, cc string) string {
				if !on {
					return ""
				}
				return `,"cache_control":` + cc
			}
			body := `{"model":"m",
				"tools":[{"name":"read","input_schema":{"type":"object"}` + mark(tc.tools, hour) + `}],
				"system":[{"type":"text","text":"sys"` + mark(tc.system, hour) + `}],
				"messages":[
				{"role":"user","content":"first"},
				{"role":"assistant","content":[{"type":"text","text":"a1"` + mark(tc.kept, minutes) + `}]},
				{"role":"user","content":[{"type":"text","text":"last"` + mark(tc.last, minutes) + `}]}]}`
			q, err := parseAnthropic(context.Background(), []byte(body), config.DefaultMaxJSONDepth)
			if err != nil {
				t.Fatal(err)
			}
			call := noa.CoreMessage{ID: "gw_toolu_h", Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "read_archive", ToolCallID: "toolu_h", Text: `{"ref":"m00001"}`}
			res := noa.CoreMessage{ID: "gw_toolu_h/result", Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "read_archive", ToolCallID: "toolu_h", Text: "first"}
			view := append(append([]noa.CoreMessage(nil), q.core...), call, res)
			msgs := q.render(anthropicDialect{}, projection{View: view})
			top := marshal(map[string]json.RawMessage{"tools": q.top["tools"], "system": q.top["system"], "messages": joinArray(msgs)})
			if got := breakpoints(t, top); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got breakpoints %v, want %v", got, tc.want)
			}
			if got := strings.Join(breakpoints(t, msgs[len(msgs)-1]), " "); got != tc.tail {
				t.Errorf("the hidden result has breakpoint %q, want %q", got, tc.tail)
			}
			// Rendered without the hidden round, the request is the
			// client's: nothing moved.
			plain := q.render(anthropicDialect{}, projection{View: q.core})
			ptop := marshal(map[string]json.RawMessage{"tools": q.top["tools"], "system": q.top["system"], "messages": joinArray(plain)})
			if got, want := len(breakpoints(t, ptop)), len(breakpoints(t, []byte(body))); got != want {
				t.Errorf("without a hidden round: got %d breakpoints, want the client's %d", got, want)
			}
		})
	}
}

// TestHiddenRoundReadFromCacheNextTurn: through the gateway, the client's
// next request starts with every unit of the hidden round's request up to
// that request's last breakpoint, the round's tail included, so the
// provider reads it from the cache rather than billing it as input twice.
func TestHiddenRoundReadFromCacheNextTurn(t *testing.T) {
	gatewaytest.RequireSDKs(t)
	model := &compressingModel{plain: true}
	r := newRig(t, model.script, withHosts(&MemoryHosts{}))
	// As Claude Code does: every user text a block, the marker on the last
	// one only, so an earlier message is sent again as it was, unmarked.
	question := func(text string, marked bool) map[string]any {
		blk := map[string]any{"type": "text", "text": text}
		if marked {
			blk["cache_control"] = map[string]any{"type": "ephemeral"}
		}
		return map[string]any{"role": "user", "content": []any{blk}}
	}
	cached := func(msgs []any) map[string]any {
		msgs = append([]any(nil), msgs...)
		last := msgs[len(msgs)-1].(map[string]any)
		msgs[len(msgs)-1] = question(last["content"].([]any)[0].(map[string]any)["text"].(string), true)
		b := anthropicBody(msgs)
		b["system"] = []any{map[string]any{"type": "text", "text": "You are terse.", "cache_control": map[string]any{"type": "ephemeral"}}}
		return b
	}
	msgs := conversation(8, 1200, "What was in file 7?")
	msgs[len(msgs)-1] = question("What was in file 7?", false)
	next := append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "final answer"}}},
		question("And file 3?", false))
	for _, b := range []map[string]any{cached(msgs), cached(next)} {
		if o := gatewaytest.RunSDK(t, gatewaytest.Call{SDK: gatewaytest.Anthropic, BaseURL: r.url, APIKey: "k", Kind: "create", Body: b}); !o.OK {
			t.Fatalf("SDK: %s", o.Message)
		}
	}
	reqs := r.up.Requests()
	if !model.done || len(reqs) != 3 {
		t.Fatalf("upstream got %d requests (compressed: %v), want 3: the Compress round, its continuation, the next turn", len(reqs), model.done)
	}
	round := reqs[1]
	var b struct {
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(round.Body, &b)
	if len(b.Messages) == 0 || !bytes.Contains(b.Messages[len(b.Messages)-1], []byte("Compress:")) || len(breakpoints(t, b.Messages[len(b.Messages)-1])) != 1 {
		t.Fatalf("the continuation's last message %.200s: want the Compress result, with a breakpoint", b.Messages[len(b.Messages)-1])
	}
	if n := len(breakpoints(t, round.Body)); n > maxBreakpoints {
		t.Errorf("the continuation has %d breakpoints, want at most %d", n, maxBreakpoints)
	}
	if !stablePrefix(t, round, reqs[2]) {
		t.Errorf("the next turn does not start with the continuation's cached prefix, its hidden round included")
	}
}
