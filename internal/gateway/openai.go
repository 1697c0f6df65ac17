package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// parseOpenAI takes a Chat Completions request apart, failing as
// parseAnthropic does. The leading system and developer messages stay out
// of noa (request.head).
func parseOpenAI(ctx context.Context, body []byte, maxDepth int) (*request, error) {
	q, raws, err := newRequest(openaiAPI, body, maxDepth)
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // tool call id -> function name
	inHead := true
	for i, raw := range raws {
		if err := ctx.Err(); err != nil {
			return nil, err // the client is gone: stop spending on its request
		}
		obj, ok := objectFields(raw)
		if !ok {
			return nil, fmt.Errorf("messages[%d] is not an object", i)
		}
		role := obj.str("role")
		if role == "" {
			return nil, fmt.Errorf("messages[%d] has no role", i)
		}
		if inHead && (role == "system" || role == "developer") {
			q.head = append(q.head, raw)
			continue
		}
		inHead = false
		idx := len(q.msgs)
		m := message{raw: raw, role: role, first: len(q.parts)}
		env := envelope(obj, "content", "tool_calls")
		nr := noaRole(role)
		if role == "tool" {
			id := obj.str("tool_call_id")
			q.add(part{msg: idx, kind: kindToolResult, raw: obj.vals["content"]},
				noa.CoreMessage{Role: noa.RoleTool, ContentType: noa.CTToolResult, ToolCallID: id, ToolName: names[id], Text: contentText(obj.vals["content"])}, role, env)
		} else {
			if err := q.openaiContent(ctx, idx, nr, role, env, obj.vals["content"]); err != nil {
				return nil, fmt.Errorf("messages[%d].content: %w", i, err)
			}
			calls, _ := splitArray(obj.vals["tool_calls"])
			for _, c := range calls {
				tc := decodeToolCall(c)
				names[tc.ID] = tc.Function.Name
				q.add(part{msg: idx, kind: kindToolCall, raw: c},
					noa.CoreMessage{Role: noa.RoleAssistant, ContentType: noa.CTToolCall, ToolName: tc.Function.Name, ToolCallID: tc.ID, Text: tc.Function.Arguments}, role, env)
			}
		}
		if len(q.parts) == m.first {
			q.add(part{msg: idx, kind: kindEmpty, raw: obj.vals["content"]}, noa.CoreMessage{Role: nr, ContentType: noa.CTText}, role, env)
		}
		m.n = len(q.parts) - m.first
		q.msgs = append(q.msgs, m)
	}
	return q, nil
}

// openaiContent adds the parts of a message's content: a string is one
// text part; an array gives one part per element (text and refusal as
// text, images, audio and files opaque).
func (q *request) openaiContent(ctx context.Context, idx int, nr noa.Role, role string, env []byte, content json.RawMessage) error {
	var elems []json.RawMessage
	switch firstByte(content) {
	case '"':
		s, ok := decodeString(content)
		if !ok {
			return fmt.Errorf("not a valid string")
		}
		if s != "" || role != "assistant" {
			q.add(part{msg: idx, kind: kindText, raw: content, str: true}, noa.CoreMessage{Role: nr, ContentType: noa.CTText, Text: s}, role, env)
		}
		return nil
	case '[':
		var ok bool
		if elems, ok = splitArray(content); !ok {
			return fmt.Errorf("not an array of content parts")
		}
	}
	for _, e := range elems {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, _ := objectFields(e)
		el := struct {
			Type, Text, Refusal string
			ImageURL            struct{ URL string }
		}{Type: f.str("type"), Text: f.str("text"), Refusal: f.str("refusal")}
		if img, ok := objectFields(f.vals["image_url"]); ok {
			el.ImageURL.URL = img.str("url")
		}
		m := noa.CoreMessage{Role: nr, ContentType: noa.CTText}
		p := part{msg: idx, raw: e, kind: kindText}
		switch el.Type {
		case "text":
			m.Text = el.Text
		case "refusal":
			m.Text = el.Refusal
		case "image_url":
			w, h := 0, 0
			if _, data, ok := strings.Cut(el.ImageURL.URL, ";base64,"); ok && strings.HasPrefix(el.ImageURL.URL, "data:") {
				w, h = imageSize(data)
			}
			p.kind, m.Text = kindOpaque, opaqueText("image", imageTokens(w, h))
		default:
			p.kind, m.Text = kindOpaque, opaqueText(el.Type, max(1, len(e)/4))
		}
		q.add(p, m, role, env)
	}
	return nil
}

// toolCall is an OpenAI tool call entry.
type toolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func decodeToolCall(raw json.RawMessage) toolCall {
	var tc toolCall
	_ = json.Unmarshal(raw, &tc)
	return tc
}

type openaiDialect struct{}

// partial rebuilds a message from the parts shown: content from its
// content parts (a string stays a string unless a tag must be added), and
// tool_calls from its tool call parts.
func (openaiDialect) partial(q *request, m message, idx []int, text, tags map[int]string) json.RawMessage {
	obj, _ := objectFields(m.raw)
	var content []json.RawMessage
	var calls []json.RawMessage
	str, strOnly := "", true
	for _, i := range idx {
		p := q.parts[i]
		switch p.kind {
		case kindToolCall:
			calls = append(calls, p.raw)
			continue
		case kindEmpty:
			continue
		case kindToolResult:
			t, changed := text[i]
			tag, tagged := tags[i]
			switch {
			case changed && tagged:
				obj = obj.with("content", rawString(t+"\n\n"+tag))
			case changed:
				obj = obj.with("content", rawString(t))
			case tagged && firstByte(p.raw) == '[':
				elems, _ := splitArray(p.raw)
				obj = obj.with("content", joinArray(append(elems, textBlock(tag))))
			case tagged && firstByte(p.raw) == '"':
				// The tag joins the JSON string as written: the result is
				// never decoded and encoded again.
				lit, esc := bytes.TrimSpace(p.raw), rawString("\n\n"+tag)
				obj = obj.with("content", append(slices.Clip(lit[:len(lit)-1]), esc[1:]...))
			case tagged:
				obj = obj.with("content", rawString(q.core[i].Text+"\n\n"+tag))
			default:
				obj = obj.with("content", rawString(q.core[i].Text))
			}
			continue
		}
		raw := p.raw
		t, changed := text[i]
		if p.str || changed {
			if !changed {
				t = q.core[i].Text
			}
			raw = textBlock(t)
			str += t
		} else {
			strOnly = false
		}
		content = append(content, raw)
		if tag, ok := tags[i]; ok {
			content = append(content, textBlock(tag))
			str += "\n\n" + tag
		}
	}
	if m.role != "tool" {
		switch {
		case len(content) == 0 && m.role == "assistant":
			obj = obj.with("content", json.RawMessage("null"))
		case len(content) == 0:
			obj = obj.with("content", rawString(""))
		case strOnly:
			obj = obj.with("content", rawString(str))
		default:
			obj = obj.with("content", joinArray(content))
		}
		if len(calls) > 0 {
			obj = obj.with("tool_calls", joinArray(calls))
		} else {
			obj = obj.without("tool_calls")
		}
	}
	return obj.encode()
}

func (openaiDialect) summary(text string) json.RawMessage {
	return marshal(map[string]any{"role": "user", "content": text})
}

func (openaiDialect) call(c noa.CoreMessage) json.RawMessage {
	return marshal(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": c.ToolCallID, "type": "function", "function": map[string]any{"name": c.ToolName, "arguments": c.Text}}}})
}

func (openaiDialect) result(r noa.CoreMessage) json.RawMessage {
	return marshal(map[string]any{"role": "tool", "tool_call_id": r.ToolCallID, "content": r.Text})
}

func (openaiDialect) nudge(msgs []json.RawMessage, text string) []json.RawMessage {
	return append(msgs, marshal(map[string]any{"role": "user", "content": text}))
}
