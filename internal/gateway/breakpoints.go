package gateway

import (
	"bytes"
	"encoding/json"
)

// Anthropic caches a prompt up to each cache_control breakpoint, and takes
// at most maxBreakpoints of them in a request (tools, system and messages
// together). The client's own breakpoints are kept: one on a part the
// projection replaced (a span a summary now stands for) moves to the block
// that now ends that prefix, the summary, so what the client asked to
// cache stays cached. Moving never adds one (the markers of a span land on
// one block). When the client caches (it sent at least one breakpoint) and
// leaves room, one more goes on the last summary, so the prefix the
// gateway keeps byte-stable between compressions (tools, system with
// noa's text, the summaries) is cached even as the client's markers move
// on. A hidden round's request ends with the gateway's own call and its
// result, after the client's last breakpoint: one goes on that result too
// (taken from the client's latest one when there is no room), so the next
// request reads the round from the cache instead of paying it as input
// and then writing it again. OpenAI caches prefixes by itself: nothing is
// added there.

// maxBreakpoints is the Messages API's limit of cache_control blocks per
// request.
const maxBreakpoints = 4

// cacheControl is the key of a breakpoint. JSON without it holds none,
// which spares taking most of a long request apart.
var cacheControl = []byte(`"cache_control"`)

// moved is a breakpoint the rendering moves: onto the last block of the
// rendered message at index out.
type moved struct {
	out int
	cc  json.RawMessage
}

// markOf is the cache_control of a part's block, or of the last block
// inside a tool result's content that has one; nil when there is none.
func markOf(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, cacheControl) {
		return nil
	}
	blk, ok := objectFields(raw)
	if !ok {
		return nil
	}
	if cc := blk.vals["cache_control"]; len(cc) > 0 && string(cc) != "null" {
		return cc
	}
	var last json.RawMessage
	if c := blk.vals["content"]; firstByte(c) == '[' {
		inner, _ := splitArray(c)
		for _, b := range inner {
			if cc := markOf(b); cc != nil {
				last = cc
			}
		}
	}
	return last
}

// marks lists the breakpoints of a tools array, a system prompt (blocks)
// or a message (its content's blocks, a tool result's inner blocks
// included), in order.
func marks(raw json.RawMessage) []json.RawMessage {
	if !bytes.Contains(raw, cacheControl) {
		return nil
	}
	var elems []json.RawMessage
	switch firstByte(raw) {
	case '[':
		elems, _ = splitArray(raw)
	case '{':
		if m, ok := objectFields(raw); ok && firstByte(m.vals["content"]) == '[' {
			elems, _ = splitArray(m.vals["content"])
		}
	}
	var out []json.RawMessage
	for _, e := range elems {
		blk, ok := objectFields(e)
		if !ok {
			continue
		}
		if cc := blk.vals["cache_control"]; len(cc) > 0 && string(cc) != "null" {
			out = append(out, cc)
		}
		if c := blk.vals["content"]; firstByte(c) == '[' {
			out = append(out, marks(c)...)
		}
	}
	return out
}

// markLast sets cache_control cc on the last block of message msg (a
// string content becomes one text block). It changes nothing, and reports
// false, when that block has a breakpoint already or cannot take one
// (thinking).
func markLast(msg, cc json.RawMessage) (json.RawMessage, bool) {
	obj, ok := objectFields(msg)
	if !ok {
		return msg, false
	}
	var blocks []json.RawMessage
	switch c := obj.vals["content"]; firstByte(c) {
	case '"':
		s, _ := decodeString(c)
		blocks = []json.RawMessage{textBlock(s)}
	case '[':
		blocks, _ = splitArray(c)
	}
	if len(blocks) == 0 {
		return msg, false
	}
	last, ok := objectFields(blocks[len(blocks)-1])
	if !ok || markOf(blocks[len(blocks)-1]) != nil {
		return msg, false
	}
	if t := last.str("type"); t == "thinking" || t == "redacted_thinking" {
		return msg, false
	}
	blocks = append(blocks[:len(blocks)-1:len(blocks)-1], last.with("cache_control", cc).encode())
	return obj.with("content", joinArray(blocks)).encode(), true
}

// placeBreakpoints applies the moves to the rendered messages out, then,
// when the client caches and the request has room, marks the last summary
// (at out index summary, -1 when there is none). out itself is left as it
// was: the messages returned are a copy.
func (q *request) placeBreakpoints(out []json.RawMessage, moves []moved, summary int) []json.RawMessage {
	if len(moves) == 0 && summary < 0 {
		return out
	}
	out = append([]json.RawMessage(nil), out...)
	for _, m := range moves {
		out[m.out], _ = markLast(out[m.out], m.cc)
	}
	if summary < 0 {
		return out
	}
	before := append(marks(q.top["tools"]), marks(q.top["system"])...)
	var after []json.RawMessage // the breakpoints after the summary
	for i, m := range out {
		if i == summary && len(marks(m)) > 0 {
			return out // marked already (a moved breakpoint)
		}
		if i <= summary {
			before = append(before, marks(m)...)
		} else {
			after = append(after, marks(m)...)
		}
	}
	n := len(before) + len(after)
	if n == 0 || n >= maxBreakpoints {
		return out // the client does not cache, or has no room left
	}
	// A breakpoint's TTL may not exceed an earlier one's: take the next
	// breakpoint's (or, with none after, the previous one's).
	var cc json.RawMessage
	if len(after) > 0 {
		cc = after[0]
	} else {
		cc = before[len(before)-1]
	}
	out[summary], _ = markLast(out[summary], cc)
	return out
}

// markTail puts a breakpoint on the last of the rendered messages out, a
// hidden round's result, when the client caches (it sent a breakpoint)
// and that message has none. With room left it is added, with the TTL of
// the latest breakpoint before it (a TTL may not exceed an earlier one's);
// with none, the latest message breakpoint moves there: the prefix it
// cached is part of the one cached now. out is changed in place.
func (q *request) markTail(out []json.RawMessage) []json.RawMessage {
	last := len(out) - 1
	if last < 0 || len(marks(out[last])) > 0 {
		return out
	}
	n := len(marks(q.top["tools"])) + len(marks(q.top["system"]))
	latest := -1 // the last message with a breakpoint
	var cc json.RawMessage
	if m := append(marks(q.top["tools"]), marks(q.top["system"])...); len(m) > 0 {
		cc = m[len(m)-1]
	}
	for i, m := range out {
		if ms := marks(m); len(ms) > 0 {
			n += len(ms)
			latest, cc = i, ms[len(ms)-1]
		}
	}
	if n == 0 {
		return out // the client does not cache
	}
	if n >= maxBreakpoints {
		if latest < 0 {
			return out // every breakpoint is on tools or system: keep them
		}
		var ok bool
		if out[latest], cc, ok = unmarkLast(out[latest]); !ok {
			return out
		}
	}
	out[last], _ = markLast(out[last], cc)
	return out
}

// unmarkLast removes the last cache_control of message msg (on one of its
// content blocks, or inside a tool result's content) and returns the
// message without it and the breakpoint removed; false when it has none.
func unmarkLast(msg json.RawMessage) (json.RawMessage, json.RawMessage, bool) {
	obj, ok := objectFields(msg)
	if !ok || firstByte(obj.vals["content"]) != '[' {
		return msg, nil, false
	}
	blocks, _ := splitArray(obj.vals["content"])
	for i := len(blocks) - 1; i >= 0; i-- {
		blk, ok := objectFields(blocks[i])
		if !ok || markOf(blocks[i]) == nil {
			continue
		}
		cc := blk.vals["cache_control"]
		var b json.RawMessage
		if len(cc) > 0 && string(cc) != "null" {
			b = blk.without("cache_control").encode()
		} else {
			// The breakpoint is inside a tool result's content.
			b, cc, _ = unmarkLast(blocks[i])
		}
		blocks = append(append(blocks[:i:i], b), blocks[i+1:]...)
		return obj.with("content", joinArray(blocks)).encode(), cc, true
	}
	return msg, nil, false
}
