package scriptedmodel

import (
	"encoding/json"
	"net/http"
	"time"
)

// Reply is what the scripted model answers. The zero Reply is an empty
// assistant turn. Which wire format it is rendered in follows the request:
// its path picks the provider, its "stream" field JSON or SSE.
type Reply struct {
	// Parts are the answer's content, in order.
	Parts []Part
	// StopReason is Anthropic's stop_reason ("end_turn", "tool_use",
	// "max_tokens", ...) or OpenAI's finish_reason ("stop", "tool_calls",
	// "length"). Empty means the tool-call reason when Parts hold a tool
	// call, else the ordinary end.
	StopReason string
	// Usage is reported with the answer. A zero InputTokens means
	// EstimateTokens of the request body; a zero OutputTokens an estimate
	// from Parts.
	Usage Usage
	// Model names the model in the answer; empty means the request's.
	Model string

	// Status, when non-zero, answers with that HTTP status and the
	// provider's error body (ErrorType and ErrorMessage; empty means the
	// provider's usual type for the status and the status text).
	Status       int
	ErrorType    string
	ErrorMessage string
	// Raw, when set, is written as it is instead of anything above.
	Raw *Raw

	// Stall holds the answer after StallAfter events of a stream (0: before
	// the first; for a JSON answer, before it), until the request ends or
	// the server closes. A request that ends while stalled is reported by
	// Server.Aborted.
	Stall      bool
	StallAfter int
	// StreamError, when set, ends a stream with the provider's error event
	// after StreamError.After events.
	StreamError *StreamError
	// ChunkRunes is the most runes one text, thinking or argument delta
	// carries; zero means 8, so every part spans several deltas.
	ChunkRunes int
}

// Raw is a reply written verbatim.
type Raw struct {
	Status int // zero means 200
	Header http.Header
	Body   []byte
}

// StreamError is an error event in the middle of a stream.
type StreamError struct {
	After   int
	Type    string // e.g. "overloaded_error"
	Message string
}

// Usage is token accounting, in Anthropic's terms (OpenAI: prompt_tokens =
// InputTokens + CacheRead + CacheCreation, completion_tokens =
// OutputTokens).
type Usage struct {
	InputTokens   int
	OutputTokens  int
	CacheRead     int
	CacheCreation int
}

// PartKind says what a Part is.
type PartKind string

// Part kinds. Thinking parts are rendered by the Anthropic format only.
const (
	KindText             PartKind = "text"
	KindToolCall         PartKind = "tool_call"
	KindThinking         PartKind = "thinking"
	KindRedactedThinking PartKind = "redacted_thinking"
)

// Part is one piece of an answer.
type Part struct {
	Kind PartKind
	// Text is a text part's text or a thinking part's reasoning.
	Text string
	// ID, Name and Input describe a tool call; Input is its JSON
	// arguments ("{}" when empty). An empty ID gets a generated one.
	ID    string
	Name  string
	Input string
	// Signature is a thinking part's signature; Data a redacted one's.
	Signature string
	Data      string
}

// Text is a text part.
func Text(s string) Part { return Part{Kind: KindText, Text: s} }

// ToolCall is a tool call part with JSON arguments input.
func ToolCall(id, name, input string) Part {
	return Part{Kind: KindToolCall, ID: id, Name: name, Input: input}
}

// Thinking is a thinking part.
func Thinking(text, signature string) Part {
	return Part{Kind: KindThinking, Text: text, Signature: signature}
}

// Say is a reply of one text part.
func Say(s string) Reply { return Reply{Parts: []Part{Text(s)}} }

// stopReason is StopReason, or end (tools when a part is a tool call).
func (r Reply) stopReason(end, tools string) string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, p := range r.Parts {
		if p.Kind == KindToolCall {
			return tools
		}
	}
	return end
}

func (r Reply) chunk() int {
	if r.ChunkRunes > 0 {
		return r.ChunkRunes
	}
	return 8
}

// usage fills the zero figures.
func (a *answer) usage() Usage {
	u := a.reply.Usage
	if u.InputTokens == 0 {
		u.InputTokens = EstimateTokens(a.req.Body)
	}
	if u.OutputTokens == 0 {
		n := 0
		for _, p := range a.reply.Parts {
			n += len(p.Text) + len(p.Input) + len(p.Name)
		}
		u.OutputTokens = EstimateTokens(make([]byte, n))
	}
	return u
}

// parts gives every tool call an id and arguments.
func (a *answer) parts(prefix string) []Part {
	out := append([]Part(nil), a.reply.Parts...)
	for i := range out {
		if out[i].Kind != KindToolCall {
			continue
		}
		if out[i].ID == "" {
			out[i].ID = a.s.id(prefix)
		}
		if out[i].Input == "" {
			out[i].Input = "{}"
		}
	}
	return out
}

// anthropic answers POST /v1/messages.
func (a *answer) anthropic() {
	stop := a.reply.stopReason("end_turn", "tool_use")
	id, parts, u := a.s.id("msg_gwt_"), a.parts("toolu_gwt_"), a.usage()
	a.w.Header().Set("request-id", a.s.id("req_gwt_"))
	usage := map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_creation_input_tokens": u.CacheCreation, "cache_read_input_tokens": u.CacheRead,
	}
	if !a.req.Stream {
		content := make([]any, 0, len(parts))
		for _, p := range parts {
			content = append(content, anthropicBlock(p, false))
		}
		a.writeJSON(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": a.reply.Model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := a.startSSE(func(se *StreamError) (string, any) {
		return "error", map[string]any{"type": "error", "error": map[string]any{"type": se.Type, "message": se.Message}}
	})
	send := e.send
	startUsage := map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": 1,
		"cache_creation_input_tokens": u.CacheCreation, "cache_read_input_tokens": u.CacheRead,
	}
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": a.reply.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}}) {
		return
	}
	if !send("ping", map[string]any{"type": "ping"}) {
		return
	}
	n := a.reply.chunk()
	for i, p := range parts {
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": anthropicBlock(p, true)}) {
			return
		}
		var deltas []map[string]any
		switch p.Kind {
		case KindText:
			for _, c := range chunks(p.Text, n) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
			}
		case KindToolCall:
			for _, c := range chunks(p.Input, n) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": c})
			}
		case KindThinking:
			for _, c := range chunks(p.Text, n) {
				deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": c})
			}
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": p.Signature})
		}
		for _, d := range deltas {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}) {
				return
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage}) {
		return
	}
	send("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicBlock renders a content block; start gives the empty form a
// stream's content_block_start carries.
func anthropicBlock(p Part, start bool) map[string]any {
	switch p.Kind {
	case KindToolCall:
		input := json.RawMessage(p.Input)
		if start {
			input = json.RawMessage("{}")
		}
		return map[string]any{"type": "tool_use", "id": p.ID, "name": p.Name, "input": input}
	case KindThinking:
		if start {
			return map[string]any{"type": "thinking", "thinking": "", "signature": ""}
		}
		return map[string]any{"type": "thinking", "thinking": p.Text, "signature": p.Signature}
	case KindRedactedThinking:
		return map[string]any{"type": "redacted_thinking", "data": p.Data}
	}
	if start {
		return map[string]any{"type": "text", "text": ""}
	}
	return map[string]any{"type": "text", "text": p.Text}
}

// openai answers POST /v1/chat/completions.
func (a *answer) openai() {
	stop := a.reply.stopReason("stop", "tool_calls")
	id, parts, u := a.s.id("chatcmpl-gwt"), a.parts("call_gwt_"), a.usage()
	created := time.Now().Unix()
	prompt := u.InputTokens + u.CacheRead + u.CacheCreation
	usage := map[string]any{
		"prompt_tokens": prompt, "completion_tokens": u.OutputTokens, "total_tokens": prompt + u.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
	}
	var text string
	var calls []Part
	for _, p := range parts {
		switch p.Kind {
		case KindText:
			text += p.Text
		case KindToolCall:
			calls = append(calls, p)
		}
	}
	if !a.req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		if text != "" || len(calls) == 0 {
			msg["content"] = text
		}
		if len(calls) > 0 {
			tc := make([]any, 0, len(calls))
			for _, c := range calls {
				tc = append(tc, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Input}})
			}
			msg["tool_calls"] = tc
		}
		a.writeJSON(map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": a.reply.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": stop}},
			"usage":   usage,
		})
		return
	}
	e := a.startSSE(func(se *StreamError) (string, any) {
		return "", map[string]any{"error": map[string]any{"message": se.Message, "type": se.Type, "param": nil, "code": nil}}
	})
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": a.reply.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if a.req.IncludeUsage {
			c["usage"] = nil
		}
		return c
	}
	send := func(v any) bool { return e.send("", v) }
	if !send(chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)) {
		return
	}
	n := a.reply.chunk()
	if text != "" {
		for _, c := range chunks(text, n) {
			if !send(chunk(map[string]any{"content": c}, nil)) {
				return
			}
		}
	}
	for i, c := range calls {
		if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil)) {
			return
		}
		for _, piece := range chunks(c.Input, n) {
			if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil)) {
				return
			}
		}
	}
	if !send(chunk(map[string]any{}, stop)) {
		return
	}
	if a.req.IncludeUsage {
		if !send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": a.reply.Model,
			"choices": []any{}, "usage": usage}) {
			return
		}
	}
	e.event("", []byte("[DONE]"))
}
