package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcproxy/mcproxy/internal/noa"
)

// parseAnthropic takes a Messages API request apart. It fails when the
// request is not shaped like one (then it is forwarded as it came and the
// provider answers it), when it nests deeper than maxDepth (a *refusal)
// and when ctx ends (ctx.Err()), checked between messages and parts.
func parseAnthropic(ctx context.Context, body []byte, maxDepth int) (*request, error) {
	q, raws, err := newRequest(anthropicAPI, body, maxDepth)
	if err != nil {
		return nil, err
	}
	names := map[string]string{} // tool_use id -> tool name
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
		env := envelope(obj, "content")
		m := message{raw: raw, role: role, first: len(q.parts)}
		nr := noaRole(role)
		content := obj.vals["content"]
		switch firstByte(content) {
		case '"':
			s, ok := decodeString(content)
			if !ok {
				return nil, fmt.Errorf("messages[%d].content is not a valid string", i)
			}
			q.add(part{msg: i, kind: kindText, raw: content, str: true}, noa.CoreMessage{Role: nr, ContentType: noa.CTText, Text: s}, role, env)
		case '[':
			blocks, ok := splitArray(content)
			if !ok {
				return nil, fmt.Errorf("messages[%d].content is not an array of blocks", i)
			}
			for j, b := range blocks {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				p, cm, err := anthropicPart(b, nr, names)
				if err != nil {
					return nil, fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
				}
				p.msg = i
				q.add(p, cm, role, env)
			}
		}
		if len(q.parts) == m.first {
			q.add(part{msg: i, kind: kindEmpty, raw: content}, noa.CoreMessage{Role: nr, ContentType: noa.CTText}, role, env)
		}
		m.n = len(q.parts) - m.first
		q.msgs = append(q.msgs, m)
	}
	return q, nil
}

func noaRole(role string) noa.Role {
	switch role {
	case "assistant":
		return noa.RoleAssistant
	case "system", "developer":
		return noa.RoleSystem
	}
	return noa.RoleUser
}

// anthropicPart converts one content block.
func anthropicPart(b json.RawMessage, role noa.Role, names map[string]string) (part, noa.CoreMessage, error) {
	blk, ok := objectFields(b)
	if !ok {
		return part{}, noa.CoreMessage{}, fmt.Errorf("not a content block (a JSON object)")
	}
	p := part{raw: b}
	m := noa.CoreMessage{Role: role, ContentType: noa.CTText}
	switch blk.str("type") {
	case "text":
		p.kind, m.Text = kindText, blk.str("text")
	case "tool_use":
		id, name := blk.str("id"), blk.str("name")
		p.kind = kindToolCall
		m.ContentType, m.ToolName, m.ToolCallID, m.Text = noa.CTToolCall, name, id, compactJSON(blk.vals["input"])
		names[id] = name
	case "tool_result":
		id := blk.str("tool_use_id")
		p.kind = kindToolResult
		m.Role, m.ContentType, m.ToolCallID, m.ToolName = noa.RoleTool, noa.CTToolResult, id, names[id]
		m.Text = contentText(blk.vals["content"])
		if string(blk.vals["is_error"]) == "true" {
			m.Text = "[error] " + m.Text
		}
	case "thinking":
		p.kind, m.ContentType, m.Text = kindReasoning, noa.CTReasoning, blk.str("thinking")
	case "redacted_thinking":
		p.kind, m.ContentType, m.Text = kindReasoning, noa.CTReasoning, "[redacted thinking]"
	case "image":
		w, h := 0, 0
		if src, ok := objectFields(blk.vals["source"]); ok && src.str("type") == "base64" {
			w, h = imageSize(src.str("data"))
		}
		p.kind, m.Text = kindOpaque, opaqueText("image", imageTokens(w, h))
	default:
		// documents, server tool blocks, search results and whatever comes
		// next: kept whole, weighed by size.
		p.kind, m.Text = kindOpaque, opaqueText(blk.str("type"), max(1, len(b)/4))
	}
	return p, m, nil
}

// contentText is a tool result's content (either API) as text: a string
// as it is, text blocks' texts joined by newlines, other blocks as
// placeholders naming their type.
func contentText(content json.RawMessage) string {
	switch firstByte(content) {
	case '"':
		s, _ := decodeString(content)
		return s
	case '[':
		blocks, ok := splitArray(content)
		if !ok {
			return string(content)
		}
		texts := make([]string, 0, len(blocks))
		for _, b := range blocks {
			f, _ := objectFields(b)
			if typ := f.str("type"); typ == "text" {
				texts = append(texts, f.str("text"))
			} else {
				texts = append(texts, "["+typ+"]")
			}
		}
		return strings.Join(texts, "\n")
	case 'n', 0: // null, or no content
		return ""
	}
	return string(content)
}

// compactJSON is raw without insignificant space ("{}" when empty).
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

type anthropicDialect struct{}

func (anthropicDialect) partial(q *request, m message, idx []int, text, tags map[int]string) json.RawMessage {
	obj, _ := objectFields(m.raw)
	blocks := make([]json.RawMessage, 0, len(idx)+len(tags))
	for _, i := range idx {
		p := q.parts[i]
		raw := p.raw
		if p.str {
			raw = textBlock(q.core[i].Text)
		}
		if t, ok := text[i]; ok && p.kind == kindOpaque {
			raw = textBlock(t) // an attachment noa cut whole: its note
		} else if ok {
			raw = withText(raw, p.kind, t)
		}
		tag, tagged := tags[i]
		if tagged && p.kind == kindToolResult {
			raw = withResultTag(raw, tag)
		}
		blocks = append(blocks, raw)
		if tagged && p.kind != kindToolResult {
			blocks = append(blocks, textBlock(tag))
		}
	}
	return obj.with("content", joinArray(blocks)).encode()
}

// withText replaces a text block's text or a tool result's content.
func withText(raw json.RawMessage, k partKind, text string) json.RawMessage {
	obj, _ := objectFields(raw)
	if k == kindToolResult {
		return obj.with("content", rawString(text)).encode()
	}
	return obj.with("text", rawString(text)).encode()
}

// withResultTag appends a text block holding tag to a tool result's
// content. A string content becomes a text block written with the same
// JSON string, so the result is never decoded and encoded again.
func withResultTag(raw json.RawMessage, tag string) json.RawMessage {
	obj, _ := objectFields(raw)
	var blocks []json.RawMessage
	switch c := obj.vals["content"]; firstByte(c) {
	case '"':
		if s := bytes.TrimSpace(c); string(s) != `""` {
			blocks = append(blocks, json.RawMessage(`{"type":"text","text":`+string(s)+`}`))
		}
	case '[':
		blocks, _ = splitArray(c)
	}
	return obj.with("content", joinArray(append(blocks, textBlock(tag)))).encode()
}

func (anthropicDialect) summary(text string) json.RawMessage {
	return marshal(map[string]any{"role": "user", "content": []json.RawMessage{textBlock(text)}})
}

func (anthropicDialect) call(c noa.CoreMessage) json.RawMessage {
	input := json.RawMessage(c.Text)
	if !json.Valid(input) {
		input = json.RawMessage("{}")
	}
	return marshal(map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": c.ToolCallID, "name": c.ToolName, "input": input}}})
}

func (anthropicDialect) result(r noa.CoreMessage) json.RawMessage {
	res := map[string]any{"type": "tool_result", "tool_use_id": r.ToolCallID, "content": r.Text}
	if strings.HasSuffix(r.ID, failedSuffix) {
		res["is_error"] = true // a call of the gateway's that failed (exchange.failed)
	}
	return marshal(map[string]any{"role": "user", "content": []any{res}})
}

// nudge goes at the end of the last user message (after its tool results,
// which must lead it), or in a user message of its own after an assistant
// turn.
func (anthropicDialect) nudge(msgs []json.RawMessage, text string) []json.RawMessage {
	if n := len(msgs); n > 0 {
		obj := object(msgs[n-1])
		var role string
		_ = json.Unmarshal(obj["role"], &role)
		if role == "user" {
			var blocks []json.RawMessage
			var s string
			if json.Unmarshal(obj["content"], &s) == nil {
				blocks = []json.RawMessage{textBlock(s)}
			} else {
				_ = json.Unmarshal(obj["content"], &blocks)
			}
			obj["content"] = marshal(append(blocks, textBlock(text)))
			out := append([]json.RawMessage(nil), msgs[:n-1]...)
			return append(out, marshal(obj))
		}
	}
	return append(msgs, marshal(map[string]any{"role": "user", "content": []json.RawMessage{textBlock(text)}}))
}
