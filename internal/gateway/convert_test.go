package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// gen generates random conversations in both formats.
type gen struct {
	r     *rand.Rand
	calls int
}

func (g *gen) text() string {
	words := []string{"alpha", "beta", "the", "file", "résumé", "日本", "quote\"d", "new\nline", "tab\t", "{json}", "<tag>", "emoji 🙂"}
	n := 1 + g.r.IntN(12)
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[g.r.IntN(len(words))])
	}
	return b.String()
}

func (g *gen) maybeCache(m map[string]any) map[string]any {
	if g.r.IntN(5) == 0 {
		m["cache_control"] = map[string]any{"type": "ephemeral"}
	}
	return m
}

// anthropic returns a random Messages API request body.
func (g *gen) anthropic(turns int) map[string]any {
	var msgs []any
	var pending []string
	for t := 0; t < turns; t++ {
		// user turn: results for pending calls, maybe text, maybe an image
		var blocks []any
		for _, id := range pending {
			res := map[string]any{"type": "tool_result", "tool_use_id": id}
			switch g.r.IntN(3) {
			case 0:
				res["content"] = g.text()
			case 1:
				res["content"] = []any{map[string]any{"type": "text", "text": g.text()}}
			default:
				res["content"] = g.text()
				res["is_error"] = true
			}
			blocks = append(blocks, g.maybeCache(res))
		}
		pending = nil
		if len(blocks) == 0 || g.r.IntN(2) == 0 {
			blocks = append(blocks, g.maybeCache(map[string]any{"type": "text", "text": g.text()}))
		}
		if g.r.IntN(8) == 0 {
			blocks = append(blocks, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": tinyPNG(3+g.r.IntN(40), 5)}})
		}
		if len(blocks) == 1 && g.r.IntN(3) == 0 {
			if b := blocks[0].(map[string]any); b["type"] == "text" && b["cache_control"] == nil {
				msgs = append(msgs, map[string]any{"role": "user", "content": b["text"]})
				goto assistant
			}
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": blocks})
	assistant:
		blocks = nil
		if g.r.IntN(3) == 0 {
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": g.text(), "signature": fmt.Sprintf("sig%d", g.r.IntN(1000))})
		}
		if g.r.IntN(4) != 0 {
			blocks = append(blocks, map[string]any{"type": "text", "text": g.text()})
		}
		for k := g.r.IntN(3); k > 0; k-- {
			g.calls++
			id := fmt.Sprintf("toolu_%03d", g.calls)
			pending = append(pending, id)
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": "read_file", "input": map[string]any{"path": g.text(), "n": g.r.IntN(100)}})
		}
		if len(blocks) == 0 {
			blocks = append(blocks, map[string]any{"type": "text", "text": "ok"})
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": blocks})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": g.text()})
	return map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": []any{map[string]any{"type": "text", "text": "be brief"}},
		"messages": msgs, "tools": []any{map[string]any{"name": "read_file", "input_schema": map[string]any{"type": "object"}}},
		"metadata": map[string]any{"user_id": "u1"}, "thinking": map[string]any{"type": "enabled", "budget_tokens": 2000}, "x_unknown": []any{1, "two"}}
}

// openai returns a random Chat Completions request body.
func (g *gen) openai(turns int) map[string]any {
	msgs := []any{map[string]any{"role": "system", "content": "be brief"}}
	if g.r.IntN(2) == 0 {
		msgs = append(msgs, map[string]any{"role": "developer", "content": []any{map[string]any{"type": "text", "text": "dev note"}}})
	}
	for t := 0; t < turns; t++ {
		if g.r.IntN(2) == 0 {
			msgs = append(msgs, map[string]any{"role": "user", "content": g.text()})
		} else {
			parts := []any{map[string]any{"type": "text", "text": g.text()}}
			if g.r.IntN(3) == 0 {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + tinyPNG(10, 10)}})
			}
			msgs = append(msgs, map[string]any{"role": "user", "content": parts})
		}
		a := map[string]any{"role": "assistant"}
		if g.r.IntN(3) == 0 {
			a["content"] = nil
		} else {
			a["content"] = g.text()
		}
		var calls []any
		for k := g.r.IntN(3); k > 0; k-- {
			g.calls++
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%03d", g.calls), "type": "function",
				"function": map[string]any{"name": "get", "arguments": fmt.Sprintf(`{"q":%q}`, g.text())}})
		}
		if len(calls) > 0 {
			a["tool_calls"] = calls
		} else if a["content"] == nil {
			a["content"] = "done"
		}
		msgs = append(msgs, a)
		for _, c := range calls {
			id := c.(map[string]any)["id"]
			msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": g.text()})
		}
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": g.text()})
	return map[string]any{"model": "gpt-4o", "messages": msgs, "temperature": 0.2, "tools": []any{map[string]any{"type": "function",
		"function": map[string]any{"name": "get", "parameters": map[string]any{"type": "object"}}}}, "tool_choice": "auto", "x_unknown": true}
}

func tinyPNG(w, h int) string {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

type format struct {
	name    string
	gen     func(g *gen, turns int) map[string]any
	parse   func([]byte) (*request, error)
	dialect dialect
}

var formats = []format{
	{"anthropic", (*gen).anthropic, withDefaults(parseAnthropic), anthropicDialect{}},
	{"openai", (*gen).openai, withDefaults(parseOpenAI), openaiDialect{}},
}

// withDefaults is parse with no deadline and the default depth bound.
func withDefaults(parse func(context.Context, []byte, int) (*request, error)) func([]byte) (*request, error) {
	return func(b []byte) (*request, error) { return parse(context.Background(), b, config.DefaultMaxJSONDepth) }
}

// reemit renders p into q's request body.
func reemit(q *request, d dialect, p projection) []byte {
	top := make(map[string]json.RawMessage, len(q.top))
	for k, v := range q.top {
		top[k] = v
	}
	top["messages"] = marshal(q.render(d, p))
	return encodeTop(top, q.keys)
}

// TestRoundTripIdentity: over generated conversations, converting and
// re-emitting with the identity projection gives the same request; and
// rebuilding every message from its parts (the path a projection that
// drops or tags parts takes) gives an equivalent one.
func TestRoundTripIdentity(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 200; seed++ {
				g := &gen{r: rand.New(rand.NewPCG(seed, 7))}
				body := mustJSON(t, f.gen(g, 1+g.r.IntN(8)))
				q, err := f.parse(body)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				out := reemit(q, f.dialect, q.identity())
				if !reflect.DeepEqual(decodeAny(t, out), decodeAny(t, body)) {
					t.Fatalf("seed %d: identity round trip changed the request:\n got %s\nwant %s", seed, out, body)
				}
				// Every message rebuilt from all its parts.
				var msgs []json.RawMessage
				msgs = append(msgs, q.head...)
				for _, m := range q.msgs {
					idx := make([]int, m.n)
					for i := range idx {
						idx[i] = m.first + i
					}
					msgs = append(msgs, f.dialect.partial(q, m, idx, nil, nil))
				}
				var orig []json.RawMessage
				_ = json.Unmarshal(q.top["messages"], &orig)
				if len(msgs) != len(orig) {
					t.Fatalf("seed %d: rebuilt %d messages, want %d", seed, len(msgs), len(orig))
				}
				for i := range msgs {
					if got, want := normalize(t, f.name, msgs[i]), normalize(t, f.name, orig[i]); !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d message %d: rebuilt\n %s\nwant\n %s", seed, i, msgs[i], orig[i])
					}
				}
			}
		})
	}
}

// normalize gives an Anthropic string content its one-text-block form,
// which the API treats the same; OpenAI messages are compared as they are.
func normalize(t *testing.T, api string, raw json.RawMessage) any {
	v := decodeAny(t, raw).(map[string]any)
	if s, ok := v["content"].(string); ok && api == "anthropic" {
		v["content"] = []any{map[string]any{"type": "text", "text": s}}
	}
	return v
}

// TestIDsStable: the same history gets the same ids on every request,
// wherever the client put its cache_control markers; a longer history keeps
// the ids of its prefix; an edit changes the ids from the edit on.
func TestIDsStable(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 50; seed++ {
				g := &gen{r: rand.New(rand.NewPCG(seed, 9))}
				req := f.gen(g, 2+g.r.IntN(6))
				a, err := f.parse(mustJSON(t, req))
				if err != nil {
					t.Fatal(err)
				}
				// Same history, cache markers moved, re-serialized.
				moved := moveCacheControl(decodeAny(t, mustJSON(t, req)))
				b, err := f.parse(mustJSON(t, moved))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ids(a), ids(b)) {
					t.Fatalf("seed %d: ids changed with the cache markers", seed)
				}
				seen := map[string]bool{}
				for _, id := range ids(a) {
					if seen[id] {
						t.Fatalf("seed %d: duplicate id %s", seed, id)
					}
					seen[id] = true
				}
				// Extended: the prefix keeps its ids.
				msgs := req["messages"].([]any)
				ext := copyMap(req)
				ext["messages"] = append(append([]any(nil), msgs...), map[string]any{"role": "assistant", "content": "more"})
				c, err := f.parse(mustJSON(t, ext))
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(c)[:len(ids(a))]; !reflect.DeepEqual(got, ids(a)) {
					t.Fatalf("seed %d: extending the history changed its ids", seed)
				}
				// Edited: ids from the edited message on differ.
				edited := copyMap(req)
				em := append([]any(nil), msgs...)
				k := len(em) - 1
				em[k] = map[string]any{"role": "user", "content": "edited"}
				edited["messages"] = em
				e, err := f.parse(mustJSON(t, edited))
				if err != nil {
					t.Fatal(err)
				}
				first := a.msgs[len(a.msgs)-1].first
				if !reflect.DeepEqual(ids(e)[:first], ids(a)[:first]) || ids(e)[first] == ids(a)[first] {
					t.Fatalf("seed %d: editing the last message should keep the ids before it and change its own", seed)
				}
			}
		})
	}
}

func ids(q *request) []string {
	out := make([]string, len(q.core))
	for i, m := range q.core {
		out[i] = m.ID
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// moveCacheControl drops every cache_control and puts one on the last block
// of the last message, as clients do from request to request.
func moveCacheControl(v any) any {
	v = dropCacheControl(v)
	msgs, _ := v.(map[string]any)["messages"].([]any)
	if len(msgs) == 0 {
		return v
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	if blocks, ok := last["content"].([]any); ok && len(blocks) > 0 {
		if b, ok := blocks[len(blocks)-1].(map[string]any); ok {
			b["cache_control"] = map[string]any{"type": "ephemeral"}
		}
	}
	return v
}

// TestConversionAnthropic checks what noa sees of each block.
func TestConversionAnthropic(t *testing.T) {
	body := `{"model":"m","messages":[
		{"role":"user","content":"hello"},
		{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"calling"},
			{"type":"tool_use","id":"tu1","name":"read","input":{"path": "/a"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"file body"}],"is_error":true},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + tinyPNG(1500, 750) + `"}},
			{"type":"document","source":{"type":"text","data":"doc"}}]},
		{"role":"assistant","content":[]}]}`
	q, err := parseAnthropic(context.Background(), []byte(body), config.DefaultMaxJSONDepth)
	if err != nil {
		t.Fatal(err)
	}
	want := []noa.CoreMessage{
		{Role: noa.RoleUser, ContentType: noa.CTText, Text: "hello"},
		{Role: noa.RoleAssistant, ContentType: noa.CTReasoning, Text: "hmm"},
		{Role: noa.RoleAssistant, ContentType: noa.CTText, Text: "calling"},
		{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "read", ToolCallID: "tu1", Text: `{"path":"/a"}`},
		{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "read", ToolCallID: "tu1", Text: "[error] file body"},
		{Role: noa.RoleUser, ContentType: noa.CTText, Text: "[opaque image: ~1500 tokens]"},
		{Role: noa.RoleUser, ContentType: noa.CTText, Text: opaqueText("document", 14)},
		{Role: noa.RoleAssistant, ContentType: noa.CTText},
	}
	if len(q.core) != len(want) {
		t.Fatalf("got %d parts, want %d: %+v", len(q.core), len(want), q.core)
	}
	for i, w := range want {
		got := q.core[i]
		got.ID = ""
		if got != w {
			t.Errorf("part %d: got %+v, want %+v", i, got, w)
		}
	}
	if n := CountTokens(nil)(q.core[5].Text); n != 1500 {
		t.Errorf("image counts %d tokens, want its estimate 1500", n)
	}
}

// TestConversionOpenAI checks what noa sees of each message.
func TestConversionOpenAI(t *testing.T) {
	body := `{"model":"m","messages":[
		{"role":"system","content":"sys"},
		{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"q\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"result"},
		{"role":"system","content":"mid"}]}`
	q, err := parseOpenAI(context.Background(), []byte(body), config.DefaultMaxJSONDepth)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.head) != 1 {
		t.Errorf("got %d head messages, want the leading system one", len(q.head))
	}
	want := []noa.CoreMessage{
		{Role: noa.RoleUser, ContentType: noa.CTText, Text: "look"},
		{Role: noa.RoleUser, ContentType: noa.CTText, Text: "[opaque image: ~1600 tokens]"},
		{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "get", ToolCallID: "c1", Text: `{"q":1}`},
		{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "get", ToolCallID: "c1", Text: "result"},
		{Role: noa.RoleSystem, ContentType: noa.CTText, Text: "mid"},
	}
	for i, w := range want {
		got := q.core[i]
		got.ID = ""
		if got != w {
			t.Errorf("part %d: got %+v, want %+v", i, got, w)
		}
	}
}

// TestRenderProjection: dropped parts, summaries, tags, hidden exchanges
// and the nudge, in both formats.
func TestRenderProjection(t *testing.T) {
	anth := `{"model":"m","messages":[
		{"role":"user","content":"first"},
		{"role":"assistant","content":[{"type":"text","text":"a1"},{"type":"tool_use","id":"t1","name":"read","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"big"}]},
		{"role":"assistant","content":"a2"},
		{"role":"user","content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}]}`
	q, err := parseAnthropic(context.Background(), []byte(anth), config.DefaultMaxJSONDepth)
	if err != nil {
		t.Fatal(err)
	}
	c := q.core
	p := projection{
		View: []noa.CoreMessage{
			{ID: noa.SummaryIDPrefix + "b1", Role: noa.RoleUser, ContentType: noa.CTText, Text: "[summary] first exchange"},
			{ID: "hidden1", Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: "Compress", ToolCallID: "tc9", Text: `{"content":[]}`},
			{ID: "hidden2", Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolName: "Compress", ToolCallID: "tc9", Text: "panel"},
			c[4], c[5],
		},
		Refs:  map[string]Ref{c[5].ID: {Ref: "m00006", Tokens: 1}, c[4].ID: {Ref: "m00005", Tokens: 1}},
		Nudge: "please compress",
	}
	got := string(marshal(q.render(anthropicDialect{}, p)))
	// The client caches (its marker on "last"), so the summary, which
	// ends the prefix the gateway keeps stable, gets a breakpoint too.
	want := `[{"content":[{"text":"[summary] first exchange","type":"text","cache_control":{"type":"ephemeral"}}],"role":"user"},` +
		`{"content":[{"id":"tc9","input":{"content":[]},"name":"Compress","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"content":"panel","tool_use_id":"tc9","type":"tool_result"}],"role":"user"},` +
		`{"role":"assistant","content":"a2"},` +
		`{"content":[{"type":"text","text":"last","cache_control":{"type":"ephemeral"}},{"text":"[m00006 · 1 tok]","type":"text"},{"text":"please compress","type":"text"}],"role":"user"}]`
	if got != want {
		t.Errorf("anthropic:\n got %s\nwant %s", got, want)
	}

	oa := `{"model":"m","messages":[{"role":"system","content":"sys"},
		{"role":"user","content":"q"},
		{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"r1"}]}`
	q, err = parseOpenAI(context.Background(), []byte(oa), config.DefaultMaxJSONDepth)
	if err != nil {
		t.Fatal(err)
	}
	c = q.core
	p = projection{View: []noa.CoreMessage{c[0], c[1], c[2], c[4]}, Refs: map[string]Ref{c[0].ID: {Ref: "m00001", Tokens: 1}, c[4].ID: {Ref: "m00005", Tokens: 1}}}
	got = string(marshal(q.render(openaiDialect{}, p)))
	want = `[{"role":"system","content":"sys"},{"role":"user","content":"q\n\n[m00001 · 1 tok]"},` +
		`{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"r1\n\n[m00005 · 1 tok]"}]`
	if got != want {
		t.Errorf("openai:\n got %s\nwant %s", got, want)
	}
}

// dropCacheControl removes every cache_control field of a decoded JSON
// value, in place.
func dropCacheControl(v any) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "cache_control")
		for k, e := range t {
			t[k] = dropCacheControl(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropCacheControl(e)
		}
	}
	return v
}
