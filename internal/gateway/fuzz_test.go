package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// FuzzParseRequest: whatever a client sends, taking it apart never panics,
// gives the same ids twice, and the identity projection of a valid request
// is valid JSON again.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		string(mustJSONF(anthropicBody(conversation(2, 40, "why?")))),
		`{"model":"gpt-4o","messages":[{"role":"system","content":"be terse"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],"cache_control":{"type":"ephemeral"}}]}]}`,
		deepBody(anthropicAPI, 600), deepBody(openaiAPI, 20), `{"messages":[]}`, `{"messages":[{"role":"user","content":"\ud83d"}]}`, `[`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		body := []byte(s)
		for _, p := range []struct {
			parse func(context.Context, []byte, int) (*request, error)
			d     dialect
		}{{parseAnthropic, anthropicDialect{}}, {parseOpenAI, openaiDialect{}}} {
			q, err := p.parse(context.Background(), body, config.DefaultMaxJSONDepth)
			var refused *refusal
			if valid := json.Valid(body); valid && errors.As(err, &refused) != (jsonDepth(body) > config.DefaultMaxJSONDepth) {
				t.Fatalf("refused=%v for a body nested %d deep (the bound is %d)", refused != nil, jsonDepth(body), config.DefaultMaxJSONDepth)
			}
			if err != nil {
				continue
			}
			again, err := p.parse(context.Background(), body, config.DefaultMaxJSONDepth)
			if err != nil || strings.Join(again.ids(), ",") != strings.Join(q.ids(), ",") {
				t.Fatalf("parsing twice gave other ids (%v)", err)
			}
			_ = q.readHead()
			_ = q.toolNames()
			out := reemit(q, p.d, q.identity())
			if json.Valid(body) && !json.Valid(out) {
				t.Fatalf("identity projection of a valid request is not JSON:\n%s\n->\n%s", body, out)
			}
		}
	})
}

// jsonDepth is the nesting depth of valid JSON b, as encoding/json counts
// it.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func mustJSONF(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzModelStream: whatever a model streams, one round through the pump
// never panics, and the client gets well-formed SSE ending in the stop
// (message_stop, [DONE]) or the provider's error event.
func FuzzModelStream(f *testing.F) {
	anth := strings.Join([]string{aStart, aBlock, aDelta, aBlockStop, aMsgDelta, aStop}, "\n\n") + "\n\n"
	oai := strings.Join([]string{oChunk, oFinish, oDone}, "\n\n") + "\n\n"
	f.Add(false, anth)
	f.Add(false, strings.Join([]string{aStart, aDelta, aStop}, "\n\n")+"\n\n")
	f.Add(false, strings.Join([]string{aStart, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Compress\",\"input\":{}}}",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}", aMsgDelta, aStop}, "\n\n")+"\n\n")
	f.Add(false, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n")
	f.Add(false, "data:{\"tYpe\":\"error\"}\n\n") // an error event without its name
	f.Add(true, oai)
	f.Add(true, `data: {"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"x","function":{"name":"Compress","arguments":"{"}},{"index":0,"function":{"name":"mine","arguments":"}"}}]}}]}`+"\n\n"+oFinish+"\n\n"+`data: {"id":"c","choices":[],"usage":{"prompt_tokens":1}}`+"\n\n"+oDone+"\n\n")
	f.Add(true, "data: {\"error\":{\"message\":\"x\"}}\n\n")
	f.Add(true, "data: {\"id\":\r\n\r\ndata: [DONE]\n\n")
	f.Fuzz(func(t *testing.T, openai bool, stream string) {
		g, err := New(Options{Config: config.GatewayConfig{Limits: config.GatewayLimits{MaxStreamEventBytes: 4 << 10, MaxAnswerBytes: 64 << 10}}})
		if err != nil {
			t.Fatal(err)
		}
		p := g.anthropic
		if openai {
			p = g.openai
		}
		rec := httptest.NewRecorder()
		x := &exchange{g: g, w: rec, r: httptest.NewRequest(http.MethodPost, "/v1/messages", nil), p: p,
			ours: map[string]bool{noa.CompressToolName: true}, usage: usageSum{}, clientIncludeUsage: true}
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}}
		sw := startStream(rec, resp)
		var rd round
		next, id := 0, ""
		if openai {
			rd = x.pumpOpenAI(sw, strings.NewReader(stream), &id, &next)
		} else {
			rd = x.pumpAnthropic(sw, strings.NewReader(stream), 0, &next)
		}
		if rd.ok {
			x.usage.add(marshal(rd.usage))
			x.close(sw, rd)
		}
		checkClientStream(t, rec.Body.Bytes(), openai)
	})
}

// checkClientStream fails unless out is SSE that the gateway's own reader
// reads to its end, ending in the stop or an error event.
func checkClientStream(t *testing.T, out []byte, openai bool) {
	t.Helper()
	sr := &sseReader{br: bufioReader(out), maxEvent: 1 << 30, maxTotal: 1 << 30}
	var last sseEvent
	for {
		ev, err := sr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the client's stream is not SSE (%v):\n%s", err, out)
		}
		last = ev
	}
	var isErr bool
	if openai {
		isErr = strings.HasPrefix(last.data, "{") && object(json.RawMessage(last.data))["error"] != nil
		if last.data != "[DONE]" && !isErr {
			t.Fatalf("the client's stream ends without [DONE] or an error chunk:\n%s", out)
		}
		return
	}
	if last.name != "message_stop" && last.name != "error" {
		t.Fatalf("the client's stream ends without message_stop or an error event:\n%s", out)
	}
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
