package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mcproxy/mcproxy/internal/config"
	"github.com/mcproxy/mcproxy/internal/gateway/gatewaytest"
	"github.com/mcproxy/mcproxy/internal/gateway/scriptedmodel"
	"github.com/mcproxy/mcproxy/internal/noa"
)

// deepBody is a request whose one message's tool input nests depth deep.
func deepBody(api api, depth int) string {
	deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	if api == openaiAPI {
		return `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"x":` + deep + `}]}]}`
	}
	return `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":` + deep + `}]}]}`
}

// A request nested past gateway.limits.max_json_depth is refused with a
// provider-style 400 naming the key, and never reaches the provider.
func TestDeepRequestRefused(t *testing.T) {
	r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return scriptedmodel.Say("x") }, withHosts(&MemoryHosts{}))
	for _, tc := range []struct {
		api        api
		path, want string
	}{
		{anthropicAPI, "/v1/messages", `"type":"invalid_request_error"`},
		{anthropicAPI, "/v1/messages/count_tokens", `"type":"invalid_request_error"`},
		{openaiAPI, "/openai/v1/chat/completions", `"type":"invalid_request_error"`},
	} {
		resp, b := r.do(t, context.Background(), http.MethodPost, tc.path, deepBody(tc.api, 16000), nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "gateway.limits.max_json_depth") || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: got %d %s, want 400 naming gateway.limits.max_json_depth", tc.path, resp.StatusCode, b)
		}
	}
	// Within the bound, the same shape is projected as usual.
	resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", deepBody(anthropicAPI, 100), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("depth 100: got %d %s, want 200", resp.StatusCode, b)
	}
	if n := len(r.up.Requests()); n != 1 {
		t.Errorf("upstream got %d requests, want 1 (only the one within the bound)", n)
	}
}

// Parsing stops when the request's context ends, between messages.
func TestParseStopsWhenTheClientHangsUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, f := range []struct {
		api   api
		parse func(context.Context, []byte, int) (*request, error)
	}{{anthropicAPI, parseAnthropic}, {openaiAPI, parseOpenAI}} {
		body := deepBody(f.api, 3)
		if _, err := f.parse(context.Background(), []byte(body), config.DefaultMaxJSONDepth); err != nil {
			t.Fatalf("%s: %v", f.api, err)
		}
		if q, err := f.parse(ctx, []byte(body), config.DefaultMaxJSONDepth); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with its context ended: got %v, %v; want context.Canceled", f.api, q, err)
		}
	}
}

// sse is a scripted model's raw stream.
func sse(events ...string) scriptedmodel.Reply {
	return scriptedmodel.Reply{Raw: &scriptedmodel.Raw{Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: []byte(strings.Join(events, "\n\n") + "\n\n")}}
}

const (
	aStart     = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}"
	aBlock     = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
	aDelta     = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}"
	aBlockStop = "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}"
	aMsgDelta  = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}"
	aStop      = "event: message_stop\ndata: {\"type\":\"message_stop\"}"
	oChunk     = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`
	oFinish    = `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	oDone      = `data: [DONE]`
)

// A malformed model stream ends the client's with the provider's error
// event: never a panic, never a silent end, never bytes the client cannot
// read passed on.
func TestMalformedStreamEndsWithAnError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		openai bool
		reply  scriptedmodel.Reply
		want   string // in the error event
	}{
		{"well formed", false, sse(aStart, aBlock, aDelta, aBlockStop, aMsgDelta, aStop), ""},
		{"stray content_block_delta", false, sse(aStart, aDelta, aBlockStop, aMsgDelta, aStop), "which no content_block_start opened"},
		{"stray content_block_stop", false, sse(aStart, aBlockStop, aMsgDelta, aStop), "which no content_block_start opened"},
		{"second content_block_start", false, sse(aStart, aBlock, aBlock, aMsgDelta, aStop), "content_block_start for index 0"},
		{"content_block_start without a block", false, sse(aStart, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}", aMsgDelta, aStop), "has no content_block"},
		{"invalid JSON", false, sse(aStart, aBlock, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",", aMsgDelta, aStop), "not a JSON object"},
		{"data not an object", false, sse(aStart, "event: ping\ndata: [1]", aMsgDelta, aStop), "not a JSON object"},
		{"message_stop without message_delta", false, sse(aStart, aBlock, aDelta, aBlockStop, aStop), "message_stop without a message_delta"},
		{"no message_stop", false, sse(aStart, aBlock, aDelta, aBlockStop, aMsgDelta), "ended early"},
		{"openai well formed", true, sse(oChunk, oFinish, oDone), ""},
		{"openai invalid JSON", true, sse(oChunk, `data: {"id":`, oFinish, oDone), "not a JSON object"},
		{"openai choices not objects", true, sse(oChunk, `data: {"id":"c1","choices":[null]}`, oFinish, oDone), "choices are not an array of objects"},
		{"openai choices not an array", true, sse(oChunk, `data: {"id":"c1","choices":{"a":1}}`, oFinish, oDone), "choices are not an array of objects"},
		{"openai tool call null", true, sse(`data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[null]}}]}`, oFinish, oDone), "tool_calls are not an array of objects"},
		{"openai tool call index", true, sse(`data: {"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":"x","function":{"arguments":"{}"}}]}}]}`, oFinish, oDone), "index is not a whole number"},
		{"openai no finish", true, sse(oChunk, oDone), "without a finish_reason"},
		{"openai no [DONE]", true, sse(oChunk, oFinish), "ended early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return tc.reply }, withHosts(&MemoryHosts{}))
			path, body := "/v1/messages", streamBody(t, conversation(1, 100, "go on"))
			if tc.openai {
				path, body = "/openai/v1/chat/completions", `{"model":"`+testModel+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			}
			resp, b := r.do(t, context.Background(), http.MethodPost, path, body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("got %d %s", resp.StatusCode, b)
			}
			check := gatewaytest.CheckAnthropicStream
			if tc.openai {
				check = gatewaytest.CheckOpenAIStream
			}
			err := check(b)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("a well-formed stream came out invalid: %v\n%s", err, b)
			case tc.want != "" && !isErrorEnd(b, tc.openai, tc.want):
				t.Errorf("got\n%s\nwant the stream to end with an error event saying %q", b, tc.want)
			}
			for _, e := range r.logs.All() {
				if strings.Contains(e.Message, "panic") {
					t.Errorf("logged %q", e.Message)
				}
			}
		})
	}
}

// isErrorEnd reports whether stream b ends with the provider's error event
// and its message holds want.
func isErrorEnd(b []byte, openai bool, want string) bool {
	events, err := gatewaytest.ParseSSE(b)
	if err != nil || len(events) == 0 {
		return false
	}
	last := events[len(events)-1]
	if openai {
		return last.Name == "" && strings.HasPrefix(last.Data, `{"error":`) && strings.Contains(last.Data, want)
	}
	return last.Name == "error" && strings.Contains(last.Data, `"type":"error"`) && strings.Contains(last.Data, want)
}

func withLimits(l config.GatewayLimits) rigOption {
	return func(o *Options) { o.Config.Limits = l }
}

// Over gateway.limits.max_stream_event_bytes and max_answer_bytes, the
// client gets the provider's error naming the key.
func TestAnswerLimits(t *testing.T) {
	long := strings.Repeat("x", 4000)
	bigDelta := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + long + "\"}}"
	for _, tc := range []struct {
		name   string
		limits config.GatewayLimits
		stream bool
		reply  scriptedmodel.Reply
		want   string
	}{
		{"event", config.GatewayLimits{MaxStreamEventBytes: 1000}, true, sse(aStart, aBlock, bigDelta, aBlockStop, aMsgDelta, aStop), "(gateway.limits.max_stream_event_bytes)"},
		{"streamed answer", config.GatewayLimits{MaxAnswerBytes: 3000}, true, sse(aStart, aBlock, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aDelta, aBlockStop, aMsgDelta, aStop), "(gateway.limits.max_answer_bytes)"},
		{"JSON answer", config.GatewayLimits{MaxAnswerBytes: 3000}, false, scriptedmodel.Say(long), "(gateway.limits.max_answer_bytes)"},
		{"within", config.GatewayLimits{MaxAnswerBytes: 8000, MaxStreamEventBytes: 5000}, true, sse(aStart, aBlock, bigDelta, aBlockStop, aMsgDelta, aStop), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(*scriptedmodel.Request) scriptedmodel.Reply { return tc.reply }, withHosts(&MemoryHosts{}), withLimits(tc.limits))
			body := anthropicBody(conversation(1, 100, "go on"))
			body["stream"] = tc.stream
			resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(mustJSON(t, body)), nil)
			switch {
			case tc.want == "" && (resp.StatusCode != http.StatusOK || gatewaytest.CheckAnthropicStream(b) != nil):
				t.Errorf("got %d %s, want the answer whole", resp.StatusCode, b)
			case tc.want != "" && tc.stream && !isErrorEnd(b, false, tc.want):
				t.Errorf("got %d %s, want a stream ending in an error event naming %s", resp.StatusCode, b, tc.want)
			case tc.want != "" && !tc.stream && (resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), tc.want)):
				t.Errorf("got %d %s, want 502 naming %s", resp.StatusCode, b, tc.want)
			}
		})
	}
}

// faultyHosts are MemoryHosts whose hosts panic in Turn (before the answer
// begins) or in Compress (in a hidden round, the client's stream under
// way): a fault injected into real hosts, to reach the handler's recover.
type faultyHosts struct {
	*MemoryHosts
	inTurn bool
}

func (f faultyHosts) Host(ctx context.Context, id string, limit int) (Host, error) {
	h, err := f.MemoryHosts.Host(ctx, id, limit)
	return faultyHost{Host: h, inTurn: f.inTurn}, err
}

type faultyHost struct {
	Host
	inTurn bool
}

func (f faultyHost) Turn(ctx context.Context) (Turn, error) {
	if f.inTurn {
		panic("injected fault in Turn")
	}
	return f.Host.Turn(ctx)
}

func (f faultyHost) Compress(context.Context, noa.CoreMessage) (noa.CoreMessage, error) {
	panic("injected fault in Compress")
}

// A panic in a gateway handler answers the client the provider's way (a
// 500 before the answer began, an error event in a stream under way) and
// is logged with its stack.
func TestHandlerPanicAnswersAndLogs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inTurn bool
		stream bool
	}{{"before the answer", true, false}, {"mid-stream", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			model := &compressingModel{}
			r := newRig(t, model.script, func(o *Options) {
				withHosts(&MemoryHosts{})(o)
				o.Hosts = faultyHosts{MemoryHosts: &MemoryHosts{}, inTurn: tc.inTurn}
			})
			body := anthropicBody(conversation(8, 1200, "What was in file 7?"))
			body["stream"] = tc.stream
			resp, b := r.do(t, context.Background(), http.MethodPost, "/v1/messages", string(mustJSON(t, body)), nil)
			switch {
			case tc.stream && (resp.StatusCode != http.StatusOK || !isErrorEnd(b, false, "internal error")):
				t.Errorf("got %d %s, want the stream to end with an error event", resp.StatusCode, b)
			case !tc.stream && (resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), `"type":"api_error"`)):
				t.Errorf("got %d %s, want a 500 api_error", resp.StatusCode, b)
			}
			logged := r.logs.FilterMessage("gateway handler panicked").All()
			if len(logged) != 1 || !strings.Contains(toString(logged[0].ContextMap()["stack"]), "faultyHost") {
				t.Errorf("got %d panic logs, want one with the stack", len(logged))
			}
		})
	}
}
